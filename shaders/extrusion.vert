// Buildings as prisms. Heights are metres; the tile matrix scales z by pixels per metre. They
// stand at full height at every pitch, as in MapLibre: looking straight down, the perspective
// shows the walls of buildings away from the centre.
//
// Shading follows MapLibre's fill-extrusion light (its default: white, intensity 0.5, fixed to
// the viewport) so the same style looks the same in both renderers: a little ambient light,
// faces lit by their angle to the light, dark colours lifted on faces that face it, and walls
// dimmed by the vertical gradient.
uniform mat4 u_matrix;
uniform float u_opacity;
uniform vec3 u_light_position;
uniform float u_light_intensity;

in vec2 a_pos;
in vec3 a_normal;
in float a_top;
in vec2 a_heights;
in vec4 a_color;

out vec4 v_color;

void main() {
    float base = a_heights.x;
    float top = max(a_heights.x, a_heights.y);
    gl_Position = u_matrix * vec4(a_pos, mix(base, top, a_top), 1.0);

    vec3 color = a_color.a > 0.0 ? a_color.rgb / a_color.a : vec3(0.0);
    float luminance = dot(color, vec3(0.2126, 0.7152, 0.0722));
    color += vec3(0.03);
    float facing = clamp(dot(a_normal, u_light_position), 0.0, 1.0);
    float light = mix(1.0 - u_light_intensity, max(1.0 - luminance + u_light_intensity, 1.0), facing);
    if (a_normal.z < 0.5) {
        float gradient = clamp((a_top + base) * pow(max(top, 0.0) / 150.0, 0.5),
                               mix(0.7, 0.98, 1.0 - u_light_intensity), 1.0);
        light *= gradient;
    }
    v_color = vec4(clamp(color * light, 0.0, 1.0), 1.0) * a_color.a * u_opacity;
}
