// Chroma plane of NV12: each RGBA8 texel holds two Cb, Cr pairs, each the mean of a 2x2 block,
// so the texel order is NV12's interleaved order.
uniform sampler2D u_source;
uniform ivec2 u_visible_size;
// 1 when the source's first row is the picture's bottom (an engine's GL draw, in GL's own
// orientation); 0 when it is the top (the map, pixels an engine handed over).
uniform int u_flip_rows;

// Rows: Cb and Cr weights for R, G, B, already scaled to the output range; offset 128/255.
uniform vec3 u_cb;
uniform vec3 u_cr;

out vec4 fragColor;

ivec2 sourcePixel(ivec2 pixel) {
    ivec2 clamped = min(pixel, u_visible_size - 1);
    return u_flip_rows == 1 ? ivec2(clamped.x, u_visible_size.y - 1 - clamped.y) : clamped;
}

vec3 rgb(ivec2 pixel) {
    return texelFetch(u_source, sourcePixel(pixel), 0).rgb;
}

vec2 chroma(ivec2 topLeft) {
    vec3 mean = (rgb(topLeft) + rgb(topLeft + ivec2(1, 0)) + rgb(topLeft + ivec2(0, 1)) + rgb(topLeft + ivec2(1, 1))) * 0.25;
    return vec2(dot(mean, u_cb), dot(mean, u_cr)) + 128.0 / 255.0;
}

void main() {
    ivec2 texel = ivec2(gl_FragCoord.xy);
    ivec2 block = ivec2(texel.x * 4, texel.y * 2);
    fragColor = vec4(chroma(block), chroma(block + ivec2(2, 0)));
}
