// Buildings as prisms. Heights are metres; the tile matrix scales z by pixels per metre.
// u_height_factor eases buildings up from flat as the camera pitches.
uniform mat4 u_matrix;
uniform float u_opacity;
uniform vec3 u_light_direction;
uniform float u_height_factor;

in vec2 a_pos;
in vec3 a_normal;
in float a_top;
in vec2 a_heights;
in vec4 a_color;

out vec4 v_color;

void main() {
    float height = mix(a_heights.x, max(a_heights.x, a_heights.y), a_top) * u_height_factor;
    gl_Position = u_matrix * vec4(a_pos, height, 1.0);
    // Walls facing the light are brighter; roofs get the full colour. Lower walls darken a
    // little so the base of a building reads against the ground.
    float facing = clamp(dot(a_normal, u_light_direction), 0.0, 1.0);
    float shade = a_normal.z > 0.5 ? 1.0 : mix(0.55, 0.85, facing) * mix(0.9, 1.0, a_top);
    v_color = vec4(a_color.rgb * shade, a_color.a) * u_opacity;
}
