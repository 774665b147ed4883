uniform sampler2D u_sheet;

in vec2 v_tex;
in vec4 v_fill;
in vec4 v_halo;
in vec2 v_params;
out vec4 fragColor;

// Sprite distance fields put the outline at alpha 0.75 (MapLibre's SDF icons).
const float OUTLINE = 0.75;

void main() {
    vec4 texel = texture(u_sheet, v_tex);
    if (v_params.x > 0.5) {
        float distance = texel.a;
        float softness = max(fwidth(distance) * 0.7, 1e-4);
        float fill = smoothstep(OUTLINE - softness, OUTLINE + softness, distance);
        float halo_edge = OUTLINE - v_params.y;
        float halo = v_params.y > 0.0 ? smoothstep(halo_edge - softness, halo_edge + softness, distance) : 0.0;
        fragColor = v_fill * fill + v_halo * halo * (1.0 - fill);
    } else {
        // The sheet is premultiplied; the fill carries the opacity in every channel.
        fragColor = texel * v_fill.a;
    }
}
