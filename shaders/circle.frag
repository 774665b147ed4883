// circle-blur as a fraction of the radius.
uniform float u_blur;

in vec2 v_unit;
in vec4 v_color;
in vec4 v_stroke_color;
in vec2 v_size;
out vec4 fragColor;

void main() {
    float outer = v_size.x + v_size.y;
    // Distance from the centre in pixels.
    float distance = length(v_unit) * outer;
    // One pixel of antialiasing, widened by the blur.
    float soft = max(1.0, u_blur * v_size.x);
    float coverage = 1.0 - smoothstep(outer - soft, outer, distance);
    float in_stroke = v_size.y > 0.0 ? smoothstep(v_size.x - 1.0, v_size.x, distance) : 0.0;
    fragColor = mix(v_color, v_stroke_color, in_stroke) * coverage;
}
