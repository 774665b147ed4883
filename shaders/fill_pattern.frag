uniform sampler2D u_sheet;
// The image's rectangle in the sheet, in texture coordinates: top-left and size.
uniform vec2 u_image_origin;
uniform vec2 u_image_extent;
uniform float u_opacity;

in vec2 v_repeat;
out vec4 fragColor;

void main() {
    vec2 within = fract(v_repeat);
    // The sheet is premultiplied.
    fragColor = texture(u_sheet, u_image_origin + within * u_image_extent) * u_opacity;
}
