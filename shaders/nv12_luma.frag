// Luma plane of NV12, four samples per RGBA8 texel: reading the target back as RGBA gives the
// plane's bytes in order, whatever single-channel formats the driver can read back.
// Pixels past the visible size (the coded size is a multiple of 16) repeat the edge.
uniform sampler2D u_source;
uniform ivec2 u_visible_size;
// 1 when the source's first row is the picture's bottom (an engine's GL draw, in GL's own
// orientation); 0 when it is the top (the map, pixels an engine handed over).
uniform int u_flip_rows;

// BT.601 luma weights scaled to the output range, and the offset (16/255 limited, 0 full).
uniform vec3 u_luma;
uniform float u_luma_offset;

out vec4 fragColor;

ivec2 sourcePixel(ivec2 pixel) {
    ivec2 clamped = min(pixel, u_visible_size - 1);
    return u_flip_rows == 1 ? ivec2(clamped.x, u_visible_size.y - 1 - clamped.y) : clamped;
}

float luma(ivec2 pixel) {
    vec3 rgb = texelFetch(u_source, sourcePixel(pixel), 0).rgb;
    return dot(rgb, u_luma) + u_luma_offset;
}

void main() {
    ivec2 texel = ivec2(gl_FragCoord.xy);
    ivec2 first = ivec2(texel.x * 4, texel.y);
    fragColor = vec4(luma(first), luma(first + ivec2(1, 0)), luma(first + ivec2(2, 0)), luma(first + ivec2(3, 0)));
}
