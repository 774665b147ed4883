// Luma plane written straight into an encoder's R8 surface layer (zero copy): one sample per
// fragment. Same maths as nv12_luma.frag.
uniform sampler2D u_source;
uniform ivec2 u_visible_size;
// 1 when the source's first row is the picture's bottom (an engine's GL draw, in GL's own
// orientation); 0 when it is the top (the map, pixels an engine handed over).
uniform int u_flip_rows;

uniform vec3 u_luma;
uniform float u_luma_offset;

out vec4 fragColor;

ivec2 sourcePixel(ivec2 pixel) {
    ivec2 clamped = min(pixel, u_visible_size - 1);
    return u_flip_rows == 1 ? ivec2(clamped.x, u_visible_size.y - 1 - clamped.y) : clamped;
}

void main() {
    fragColor = vec4(dot(texelFetch(u_source, sourcePixel(ivec2(gl_FragCoord.xy)), 0).rgb, u_luma) + u_luma_offset, 0.0, 0.0, 1.0);
}
