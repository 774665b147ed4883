uniform float u_blur;
#ifdef DASHED
// Dash pattern in pixels: u_dash_ends[i] is where dash or gap i ends; even entries are dashes.
uniform int u_dash_count;
uniform float u_dash_ends[8];
#endif
#ifdef PATTERNED
// A sprite image along the line (line-pattern): its rectangle in the premultiplied sheet, in
// texture coordinates, its size in pixels, and the layer's opacity.
uniform sampler2D u_sheet;
uniform vec2 u_image_origin;
uniform vec2 u_image_extent;
uniform vec2 u_pattern_size;
uniform float u_pattern_opacity;
#endif
#ifdef TRIMMED
// The route: what lies before this distance (v_distance's unit) is the part already driven;
// the remaining route is drawn from it, the driven part (when a style draws it) up to it.
uniform float u_trim_before;
uniform float u_trim_after;
// Traffic: u_congestion_count change points, two to a vec4 (distance, level, distance, level),
// in order along the route; from each one on, the line takes u_palette[level] (0: unknown).
// No change points: the vertex colour.
uniform int u_congestion_count;
uniform vec4 u_congestion[32];
uniform vec4 u_palette[5];
// line-gradient: u_gradient_count colours (premultiplied) at even steps of the route's progress
// (0 at its start, 1 at its end), and u_progress_count (distance, progress) pairs, two to a vec4,
// in order along the mesh, between which the progress is linear. No colours: the others decide.
uniform int u_gradient_count;
uniform vec4 u_gradient[64];
uniform int u_progress_count;
uniform vec4 u_progress_map[16];
#endif

in vec2 v_edge;
in float v_half_width;
in float v_distance;
in vec4 v_color;
in float v_pixel;
out vec4 fragColor;

void main() {
    float distance_from_centre = length(v_edge);
    // One screen pixel of softness at any pitch: v_pixel is the size of a screen pixel here.
    float softness = v_pixel + u_blur;
    float alpha = clamp((v_half_width - distance_from_centre) / softness + 0.5, 0.0, 1.0);
#ifdef DASHED
    float period = u_dash_ends[u_dash_count - 1];
    float position = mod(v_distance, period);
    float edge_softness = max(fwidth(v_distance), 1e-4);
    float start = 0.0;
    float coverage = 0.0;
    for (int i = 0; i < 8; i += 2) {
        if (i >= u_dash_count) break;
        float end = u_dash_ends[i];
        coverage = max(coverage, clamp(min(position - start, end - position) / edge_softness + 0.5, 0.0, 1.0));
        start = i + 1 < u_dash_count ? u_dash_ends[i + 1] : period;
    }
    alpha *= coverage;
#endif
    vec4 color = v_color;
#ifdef PATTERNED
    // Along the line one image per image width scaled by line width over image height; across
    // it the image at its own size about the centre line, no further out than the line's edge.
    float line_width = max(2.0 * v_half_width, 1e-3);
    float along = fract(v_distance * u_pattern_size.y / (u_pattern_size.x * line_width));
    float across = v_edge.y / (v_half_width + 0.5);
    float reach = clamp(v_half_width, 0.0, (u_pattern_size.y + 2.0) * 0.5);
    float down = clamp(0.5 + across * reach / u_pattern_size.y, 0.0, 1.0);
    color = texture(u_sheet, u_image_origin + vec2(along, down) * u_image_extent) * u_pattern_opacity;
#endif
#ifdef TRIMMED
    // A one-pixel soft cut, as at the line's sides.
    alpha *= clamp((v_distance - u_trim_before) / v_pixel + 0.5, 0.0, 1.0);
    alpha *= clamp((u_trim_after - v_distance) / v_pixel + 0.5, 0.0, 1.0);
    if (u_congestion_count > 0) {
        int level = 0;
        for (int i = 0; i < 64; i++) {
            if (i >= u_congestion_count) break;
            vec4 pair = u_congestion[i / 2];
            vec2 point = (i % 2 == 0) ? pair.xy : pair.zw;
            if (v_distance < point.x) break;
            level = int(point.y + 0.5);
        }
        color = u_palette[clamp(level, 0, 4)];
    }
    if (u_gradient_count > 1 && u_progress_count > 0) {
        vec2 previous = u_progress_map[0].xy;
        float progress = previous.y;
        for (int i = 1; i < 32; i++) {
            if (i >= u_progress_count) break;
            vec4 pair = u_progress_map[i / 2];
            vec2 point = (i % 2 == 0) ? pair.xy : pair.zw;
            if (v_distance <= point.x) {
                float span = point.x - previous.x;
                progress = span > 0.0 ? mix(previous.y, point.y, clamp((v_distance - previous.x) / span, 0.0, 1.0)) : point.y;
                break;
            }
            previous = point;
            progress = point.y;
        }
        float position = clamp(progress, 0.0, 1.0) * float(u_gradient_count - 1);
        int below = int(floor(position));
        int above = min(below + 1, u_gradient_count - 1);
        color = mix(u_gradient[below], u_gradient[above], position - float(below));
    }
#endif
    fragColor = color * alpha;
}
