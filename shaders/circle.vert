// Discs as screen quads: each corner carries the centre in screen pixels and its offset in
// radii, so the fragment shader knows how far from the centre it is.
uniform vec2 u_screen_size;

in vec2 a_pos;
// xy: the corner's offset from the centre in pixels; zw: the same in units of the outer radius.
in vec4 a_extrude;
in vec4 a_color;
in vec4 a_stroke_color;
// x: radius in pixels; y: stroke width in pixels.
in vec2 a_size;

out vec2 v_unit;
out vec4 v_color;
out vec4 v_stroke_color;
out vec2 v_size;

void main() {
    v_unit = a_extrude.zw;
    v_color = a_color;
    v_stroke_color = a_stroke_color;
    v_size = a_size;
    vec2 ndc = (a_pos + a_extrude.xy) / u_screen_size * 2.0 - 1.0;
    gl_Position = vec4(ndc, 0.0, 1.0);
}
