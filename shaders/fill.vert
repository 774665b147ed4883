// Flat polygons in tile units (or pixels, with an orthographic matrix): fills, tile stencil
// masks, backgrounds and screen-space controls.
uniform mat4 u_matrix;
uniform float u_opacity;

in vec2 a_pos;
// Premultiplied colour: a per-vertex array when the style makes it depend on the feature,
// otherwise one constant attribute value for the whole draw.
in vec4 a_color;

out vec4 v_color;

void main() {
    v_color = a_color * u_opacity;
    gl_Position = u_matrix * vec4(a_pos, 0.0, 1.0);
}
