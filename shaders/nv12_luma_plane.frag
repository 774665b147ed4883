// Luma plane written straight into an encoder's R8 surface layer (zero copy): one sample per
// fragment. Same maths as nv12_luma.frag.
uniform sampler2D u_source;
uniform ivec2 u_visible_size;
uniform vec3 u_luma;
uniform float u_luma_offset;

out vec4 fragColor;

void main() {
    ivec2 pixel = min(ivec2(gl_FragCoord.xy), u_visible_size - 1);
    fragColor = vec4(dot(texelFetch(u_source, pixel, 0).rgb, u_luma) + u_luma_offset, 0.0, 0.0, 1.0);
}
