// Lines extruded on the ground plane: `a_extrude` is in half widths, scaled by the width in
// pixels times tile units per pixel, so a line is as wide as the style says at the centre of the
// view and narrows with distance in pitched views, as MapLibre draws it.
uniform mat4 u_matrix;
uniform float u_units_per_pixel;
uniform float u_opacity;
// Clip-space w at the centre of the view (1 for screen-space drawing): w / u_centre_w is how
// many of our pixel units one screen pixel spans here.
uniform float u_centre_w;

in vec2 a_pos;
in vec2 a_extrude;
in vec2 a_edge;
in float a_distance;
in vec4 a_color;
in float a_width;

out vec2 v_edge;
out float v_half_width;
out float v_distance;
out vec4 v_color;
out float v_pixel;

void main() {
    // Half a pixel more on each side leaves room for the anti-aliased edge.
    float half_width = a_width * 0.5;
    float outset = half_width + 0.5;
    v_edge = a_edge * outset;
    v_half_width = half_width;
    v_distance = a_distance / u_units_per_pixel;
    v_color = a_color * u_opacity;
    gl_Position = u_matrix * vec4(a_pos + a_extrude * outset * u_units_per_pixel, 0.0, 1.0);
    v_pixel = gl_Position.w / u_centre_w;
}
