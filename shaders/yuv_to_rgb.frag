// An engine's YUV picture (NV12 or I420, BT.601 limited range) as RGB, one pixel per fragment,
// so that it is converted for the encoder like any other picture. Every plane is an R8 texture:
// NV12's chroma plane holds its Cb, Cr pairs side by side, I420's Cb and Cr are two textures.
// Chroma is taken from the sample that covers the pixel (no interpolation): the encoder
// averages it again into the same 2x2 blocks.
uniform sampler2D u_luma_plane;
uniform sampler2D u_cb_plane;
uniform sampler2D u_cr_plane;
uniform int u_interleaved;

out vec4 fragColor;

void main() {
    ivec2 pixel = ivec2(gl_FragCoord.xy);
    ivec2 block = pixel / 2;
    float y = texelFetch(u_luma_plane, pixel, 0).r;
    float cb;
    float cr;
    if (u_interleaved == 1) {
        cb = texelFetch(u_cb_plane, ivec2(block.x * 2, block.y), 0).r;
        cr = texelFetch(u_cb_plane, ivec2(block.x * 2 + 1, block.y), 0).r;
    } else {
        cb = texelFetch(u_cb_plane, block, 0).r;
        cr = texelFetch(u_cr_plane, block, 0).r;
    }
    float luma = (y - 16.0 / 255.0) * (255.0 / 219.0);
    float blue = (cb - 128.0 / 255.0) * (255.0 / 224.0);
    float red = (cr - 128.0 / 255.0) * (255.0 / 224.0);
    vec3 rgb = vec3(luma + 1.402 * red, luma - 0.344136 * blue - 0.714136 * red, luma + 1.772 * blue);
    fragColor = vec4(clamp(rgb, 0.0, 1.0), 1.0);
}
