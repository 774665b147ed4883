// Polygon edges drawn as two-pixel GL lines in the fill's colour, faded by the distance to the
// edge: MapLibre's way of anti-aliasing fills without multisampling.
uniform mat4 u_matrix;
uniform vec2 u_viewport;
uniform float u_opacity;

in vec2 a_pos;
in vec4 a_color;

out vec2 v_edge;
out vec4 v_color;

void main() {
    gl_Position = u_matrix * vec4(a_pos, 0.0, 1.0);
    // The edge's own window position, to measure each fragment's distance from it.
    v_edge = (gl_Position.xy / gl_Position.w + 1.0) * 0.5 * u_viewport;
    v_color = a_color * u_opacity;
}
