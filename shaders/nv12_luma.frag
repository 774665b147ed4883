// Luma plane of NV12, four samples per RGBA8 texel: reading the target back as RGBA gives the
// plane's bytes in order, whatever single-channel formats the driver can read back.
// Pixels past the visible size (the coded size is a multiple of 16) repeat the edge.
uniform sampler2D u_source;
uniform ivec2 u_visible_size;
// BT.601 luma weights scaled to the output range, and the offset (16/255 limited, 0 full).
uniform vec3 u_luma;
uniform float u_luma_offset;

out vec4 fragColor;

float luma(ivec2 pixel) {
    vec3 rgb = texelFetch(u_source, min(pixel, u_visible_size - 1), 0).rgb;
    return dot(rgb, u_luma) + u_luma_offset;
}

void main() {
    ivec2 texel = ivec2(gl_FragCoord.xy);
    ivec2 first = ivec2(texel.x * 4, texel.y);
    fragColor = vec4(luma(first), luma(first + ivec2(1, 0)), luma(first + ivec2(2, 0)), luma(first + ivec2(3, 0)));
}
