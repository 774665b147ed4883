// Sprite quads placed on the CPU in screen pixels, sampled from the sprite sheet.
uniform vec2 u_screen_size;
uniform vec2 u_sheet_size;

in vec2 a_pos;
in vec2 a_tex;
in vec4 a_fill;
in vec4 a_halo;
// x: 1 for a signed-distance icon; y: how far below the outline its halo reaches.
in vec2 a_params;

out vec2 v_tex;
out vec4 v_fill;
out vec4 v_halo;
out vec2 v_params;

void main() {
    v_tex = a_tex / u_sheet_size;
    v_fill = a_fill;
    v_halo = a_halo;
    v_params = a_params;
    vec2 ndc = a_pos / u_screen_size * 2.0 - 1.0;
    gl_Position = vec4(ndc, 0.0, 1.0);
}
