in vec2 v_edge;
in vec4 v_color;
out vec4 fragColor;

void main() {
    float distance_to_edge = length(v_edge - gl_FragCoord.xy);
    fragColor = v_color * (1.0 - smoothstep(0.0, 1.0, distance_to_edge));
}
