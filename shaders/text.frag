uniform sampler2D u_atlas;
// Atlas value at the glyph outline, and atlas value change per atlas pixel of distance.
uniform float u_sdf_edge;
uniform float u_sdf_per_pixel;

in vec2 v_tex;
in vec4 v_fill;
in vec4 v_halo;
in vec2 v_params;
out vec4 fragColor;

void main() {
    float distance = texture(u_atlas, v_tex).r;
    float softness = max(fwidth(distance) * 0.7, 1e-4);
    float fill = smoothstep(u_sdf_edge - softness, u_sdf_edge + softness, distance);
    float halo_edge = u_sdf_edge - v_params.y / v_params.x * u_sdf_per_pixel;
    float halo = smoothstep(halo_edge - softness, halo_edge + softness, distance);
    fragColor = v_fill * fill + v_halo * halo * (1.0 - fill);
}
