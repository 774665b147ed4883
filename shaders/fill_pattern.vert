// Polygons (or a tile's square, for a background) filled with a sprite image repeated in
// screen-sized pixels, continuous from tile to tile.
uniform mat4 u_matrix;
// Map pixels per tile unit at the current zoom.
uniform float u_pixels_per_unit;
// The tile's top-left corner in map pixels, modulo the image size, so repeats line up across tiles.
uniform vec2 u_offset;
// The image's size in map pixels.
uniform vec2 u_image_size;

in vec2 a_pos;

out vec2 v_repeat;

void main() {
    v_repeat = (u_offset + a_pos * u_pixels_per_unit) / u_image_size;
    gl_Position = u_matrix * vec4(a_pos, 0.0, 1.0);
}
