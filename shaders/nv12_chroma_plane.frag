// Chroma plane written straight into an encoder's GR88 surface layer (zero copy): Cb in the
// first byte (red), Cr in the second (green), the mean of each 2x2 block. Same maths as
// nv12_chroma.frag.
uniform sampler2D u_source;
uniform ivec2 u_visible_size;
// 1 when the source's first row is the picture's bottom (an engine's GL draw, in GL's own
// orientation); 0 when it is the top (the map, pixels an engine handed over).
uniform int u_flip_rows;

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

void main() {
    ivec2 block = ivec2(gl_FragCoord.xy) * 2;
    vec3 mean = (rgb(block) + rgb(block + ivec2(1, 0)) + rgb(block + ivec2(0, 1)) + rgb(block + ivec2(1, 1))) * 0.25;
    fragColor = vec4(dot(mean, u_cb) + 128.0 / 255.0, dot(mean, u_cr) + 128.0 / 255.0, 0.0, 1.0);
}
