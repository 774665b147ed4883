/*
 * Calls every function of carwindow.h with bad arguments and in the wrong order and checks each
 * status, then makes sure the good paths still work afterwards. Run by scripts/c-api.sh check
 * under valgrind's memcheck: no invalid access and no definite leak may be reported either.
 *
 *   bad-arguments ASSETS_FOLDER OUT_FOLDER
 */
#define _POSIX_C_SOURCE 200809L
#include <carwindow.h>

#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0, checks = 0;

/* Expects `call` to return `expected`; a failure also needs a message. */
#define EXPECT(expected, call)                                                                        \
    do {                                                                                              \
        carwindow_status got_ = (call);                                                               \
        checks++;                                                                                     \
        if (got_ != (expected)) {                                                                     \
            failures++;                                                                               \
            fprintf(stderr, "FAIL line %d: %s returned %s, expected %s (%s)\n", __LINE__, #call,     \
                    carwindow_status_name(got_), carwindow_status_name(expected),                     \
                    carwindow_last_error_message());                                                  \
        } else if (got_ != CARWINDOW_OK && carwindow_last_error_message()[0] == '\0') {               \
            failures++;                                                                               \
            fprintf(stderr, "FAIL line %d: %s failed without a message\n", __LINE__, #call);         \
        }                                                                                             \
    } while (0)

#define REQUIRE(condition)                                                                            \
    do {                                                                                              \
        checks++;                                                                                     \
        if (!(condition)) {                                                                           \
            failures++;                                                                               \
            fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #condition);                              \
        }                                                                                             \
    } while (0)

static void sleep_ms(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

/* An access-unit callback that tries to call back into the API, which must be refused. */
static atomic_int callback_calls, callback_refusals;
static carwindow_session *callback_session;
static int reentrant_access_unit(const uint8_t *data, size_t size, int64_t pts_us, int32_t is_idr, void *user_data) {
    (void)data, (void)size, (void)pts_us, (void)is_idr, (void)user_data;
    atomic_fetch_add(&callback_calls, 1);
    if (carwindow_session_request_idr(callback_session) == CARWINDOW_ERROR_INVALID_STATE) atomic_fetch_add(&callback_refusals, 1);
    return 0;
}

/* A log callback that counts lines and tries to call back into the API, which must be refused. */
static atomic_int log_lines, log_refusals;
static void counting_log(carwindow_log_level level, const char *line, void *user_data) {
    (void)level, (void)user_data;
    if (line != NULL && line[0] != '\0') atomic_fetch_add(&log_lines, 1);
    if (carwindow_set_log(NULL, NULL, CARWINDOW_LOG_INFO) == CARWINDOW_ERROR_INVALID_STATE) atomic_fetch_add(&log_refusals, 1);
}

/* An event callback that calls the API, and closes its own session on the first stream start. */
static atomic_int events_seen, closed_from_callback, calls_from_callback_ok;
static void closing_event_handler(const carwindow_event *event, void *user_data) {
    carwindow_session *session = *(carwindow_session **)user_data;
    atomic_fetch_add(&events_seen, 1);
    if (event->message == NULL) fprintf(stderr, "FAIL: an event without a message\n");
    if (event->type == CARWINDOW_EVENT_STREAM_STARTED && !atomic_load(&closed_from_callback)) {
        carwindow_statistics statistics;
        if (carwindow_session_get_statistics(session, &statistics) == CARWINDOW_OK) atomic_fetch_add(&calls_from_callback_ok, 1);
        if (carwindow_session_close(session) == CARWINDOW_OK) atomic_store(&closed_from_callback, 1);
    }
}

/* A draw that tries the API from the render thread (refused), then refuses its picture. */
static atomic_int draw_calls, draw_api_refusals;
static carwindow_session *drawing_session;
static int refusing_draw(const carwindow_gl_frame *frame, void *user_data) {
    (void)user_data;
    atomic_fetch_add(&draw_calls, 1);
    if (frame->width == 64 && carwindow_session_invalidate(drawing_session) == CARWINDOW_ERROR_INVALID_STATE) {
        atomic_fetch_add(&draw_api_refusals, 1);
    }
    return 5;
}

/* A custom layer that draws nothing: it counts its calls, checks the matrix helper works inside
   it and that any other call is refused there. */
static atomic_int layer_calls, layer_matrix_ok, layer_api_refusals;
static carwindow_session *layered_session;
static int counting_layer(const carwindow_custom_layer_frame *frame, void *user_data) {
    (void)user_data;
    atomic_fetch_add(&layer_calls, 1);
    float matrix[16];
    carwindow_coordinate origin = {60.1699, 24.9415};
    if (carwindow_custom_layer_matrix(frame, origin, matrix) == CARWINDOW_OK && isfinite(matrix[0]) && matrix[15] != 0) {
        atomic_fetch_add(&layer_matrix_ok, 1);
    }
    if (carwindow_session_request_idr(layered_session) == CARWINDOW_ERROR_INVALID_STATE) atomic_fetch_add(&layer_api_refusals, 1);
    return frame->width > 0 ? 0 : 1;
}

static void fill(carwindow_session_config *config, const char *assets, char *paths[4]) {
    carwindow_session_config_init(config);
    config->tiles_path = paths[0];
    config->style = paths[1];
    config->fonts_path = paths[2];
    config->annexb_path = paths[3];
    config->camera = (carwindow_camera){{60.1699, 24.9415}, 15, 0, 0};
    config->width = 320;
    config->height = 192;
    config->encoder = CARWINDOW_ENCODER_OPENH264;
    (void)assets;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s ASSETS_FOLDER OUT_FOLDER\n", argv[0]);
        return 64;
    }
    char tiles[4096], style[4096], fonts[4096], annexb[4096], second[4096], third[4096], missing[4096], cache[4096];
    snprintf(tiles, sizeof tiles, "%s/helsinki.pmtiles", argv[1]);
    snprintf(style, sizeof style, "%s/styles/day.json", argv[1]);
    snprintf(fonts, sizeof fonts, "%s/fonts", argv[1]);
    snprintf(annexb, sizeof annexb, "%s/bad-arguments.h264", argv[2]);
    snprintf(second, sizeof second, "%s/bad-arguments-2.h264", argv[2]);
    snprintf(third, sizeof third, "%s/bad-arguments-3.h264", argv[2]);
    snprintf(missing, sizeof missing, "%s/no-such-folder/out.h264", argv[2]);
    snprintf(cache, sizeof cache, "%s/cache", argv[2]);
    char *paths[4] = {tiles, style, fonts, annexb};
    const double nan = NAN;
    carwindow_context *bogus_context = (carwindow_context *)(uintptr_t)0x12345670;
    carwindow_session *bogus_session = (carwindow_session *)(uintptr_t)0x12345670;

    /* Library-wide functions. */
    REQUIRE(carwindow_api_version() >> 16 == CARWINDOW_API_VERSION_MAJOR);
    REQUIRE(strcmp(carwindow_status_name(CARWINDOW_ERROR_INPUT), "CARWINDOW_ERROR_INPUT") == 0);
    REQUIRE(strcmp(carwindow_status_name(-77), "unknown status") == 0);
    REQUIRE(carwindow_last_error_message() != NULL);
    carwindow_free(NULL);
    carwindow_session_config_init(NULL);
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_set_log(NULL, NULL, 9));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_set_log(counting_log, NULL, -1));
    EXPECT(CARWINDOW_OK, carwindow_set_log(counting_log, NULL, CARWINDOW_LOG_DEBUG));

    /* Contexts: NULL and made-up handles, NULL out-pointers, unknown platforms. */
    carwindow_context *context = bogus_context;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_context_create(NULL, NULL));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_context_create("vulkan", &context));
    REQUIRE(context == NULL);
    char *text = (char *)"untouched";
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_context_describe(NULL, &text));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_context_describe(bogus_context, &text));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_context_close(NULL));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_context_close(bogus_context));

    EXPECT(CARWINDOW_OK, carwindow_context_create(NULL, &context));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_context_describe(context, NULL));
    text = NULL;
    EXPECT(CARWINDOW_OK, carwindow_context_describe(context, &text));
    REQUIRE(text != NULL && strstr(text, "OpenGL ES") != NULL);
    carwindow_free(text);

    /* Session creation: every kind of bad config. */
    carwindow_session_config config;
    carwindow_session *session = bogus_session;
    fill(&config, argv[1], paths);
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_create(NULL, &config, &session));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_create(bogus_context, &config, &session));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, NULL, &session));
    REQUIRE(session == NULL);
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, NULL));
    config.struct_size = 8;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    /* A caller built against minor version 1 (without encoder_threads) is read with the default:
       the 99 beyond its struct is never read, so the create gets as far as the size limits
       (checked after encoder_threads) and fails on them, not on the size or the thread count. */
    fill(&config, argv[1], paths);
    config.encoder_threads = 99;
    config.min_width = 2000;
    config.max_width = 1000;
    config.struct_size = offsetof(carwindow_session_config, encoder_threads);
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    REQUIRE(strstr(carwindow_last_error_message(), "smallest size") != NULL);
    config.struct_size = sizeof config;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    REQUIRE(strstr(carwindow_last_error_message(), "encoder_threads") != NULL);
    config.struct_size = offsetof(carwindow_session_config, encoder_threads) - 8;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    /* Without tiles_path the style's own sources: the bundled style names helsinki.pmtiles
       beside the style file, where there is none, so the create fails on that source. */
    fill(&config, argv[1], paths);
    config.tiles_path = NULL;
    config.cache_path = cache;
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_create(context, &config, &session));
    REQUIRE(strstr(carwindow_last_error_message(), "tiles_path is NULL") != NULL);
    REQUIRE(strstr(carwindow_last_error_message(), "source \"openmaptiles\"") != NULL);
    REQUIRE(session == NULL);
    config.style = "{\"version\": 8, \"sources\": {}, \"layers\": []}";
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_create(context, &config, &session));
    REQUIRE(strstr(carwindow_last_error_message(), "no vector source") != NULL);
    config.tiles_path = "/no/such/tiles.pmtiles";
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_create(context, &config, &session));
    /* A cache folder that cannot be made, and a sprite on a server that refuses the
       connection, are warnings, not failures: the map draws from its files without them. */
    fill(&config, argv[1], paths);
    config.style = "{\"version\": 8, \"sprite\": \"http://127.0.0.1:9/sprite\", \"sources\": {}, \"layers\": []}";
    config.cache_path = "/proc/carwindow-cache";
    carwindow_session *uncached = NULL;
    EXPECT(CARWINDOW_OK, carwindow_session_create(context, &config, &uncached));
    EXPECT(CARWINDOW_OK, carwindow_session_close(uncached));
    fill(&config, argv[1], paths);
    config.style = "{ this is not JSON";
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_create(context, &config, &session));
    config.style = "/no/such/style.json";
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.fonts_path = "/no/such/fonts";
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.camera.zoom = nan;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    config.camera.zoom = 15;
    config.camera.center.latitude = 91;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    config.camera.center.latitude = 60.17;
    config.camera.pitch = 75;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.width = 0;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    config.width = 100000;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.scale = nan;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    config.scale = 0.5;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.frames_per_second = -1;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    config.frames_per_second = INFINITY;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.bitrate = 5;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.encoder = 7;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.encoder_threads = 17;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.appearance = -1;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.show_controls = 2;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.min_width = 900;
    config.max_width = 400;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.annexb_path = NULL;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session)); /* no output */
    config.rtp_port = 5004;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session)); /* port, no host */
    config.rtp_port = 0;
    config.rtp_host = "127.0.0.1";
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session)); /* host, no port */
    fill(&config, argv[1], paths);
    config.sdp_path = "x.sdp";
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session)); /* SDP without RTP */
    fill(&config, argv[1], paths);
    config.annexb_path = missing;
    EXPECT(CARWINDOW_ERROR_OUTPUT, carwindow_session_create(context, &config, &session));
    fill(&config, argv[1], paths);
    config.capability_json = "{\"preferredResolution\": \"wide\"}";
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_create(context, &config, &session));
    /* Protection: a certificate needs its key and a head unit; files that are not there are input errors. */
    fill(&config, argv[1], paths);
    config.sdl_certificate_path = "/no/such/app.pem";
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session)); /* no key */
    config.sdl_private_key_path = "/no/such/app.key";
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session)); /* no head unit */
    config.sdl_host = "127.0.0.1";
    config.sdl_port = 9;
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_create(context, &config, &session));
    config.sdl_protection = 7;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    REQUIRE(session == NULL);

    /* Every session function on a NULL and a made-up handle. */
    carwindow_session *bad_handles[2] = {NULL, bogus_session};
    carwindow_camera camera = {{60.17, 24.95}, 15, 0, 0};
    carwindow_vehicle vehicle = {{60.17, 24.95}, 90, 10};
    carwindow_coordinate points[2] = {{60.17, 24.95}, {60.18, 24.96}};
    size_t counts[1] = {2};
    carwindow_touch_point finger = {0, 10, 100, 100};
    carwindow_touch_event touch = {CARWINDOW_TOUCH_BEGIN, &finger, 1};
    carwindow_haptic_region region = {7, 10, 10, 50, 50};
    carwindow_haptic_region *regions = NULL;
    size_t region_count = 0;
    carwindow_statistics statistics;
    for (int i = 0; i < 2; i++) {
        carwindow_session *bad = bad_handles[i];
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_start(bad));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_stop(bad));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_close(bad));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_camera(bad, &camera, 0));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_get_camera(bad, &camera));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_vehicle(bad, &vehicle));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_follow_vehicle(bad, 1));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_covered_insets(bad, 0, 0, 0, 0));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_label_language(bad, "sv"));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_route(bad, points, 2));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_route_progress(bad, 10));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_route_congestion(bad, NULL, 0));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_maneuver(bad, 10));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_appearance(bad, CARWINDOW_APPEARANCE_NIGHT));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_style(bad, style, NULL));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_geojson(bad, "carwindow-markers", "{}", 2));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_alternatives(bad, points, counts, 1));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_request_idr(bad));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_touch(bad, &touch));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_touch_json(bad, "{}"));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_haptic_regions(bad, &region, 1));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_get_haptic_regions(bad, &regions, &region_count));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_select_region(bad, 7));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_controls_visible(bad, 1));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_perform(bad, CARWINDOW_COMMAND_ZOOM_IN));
        EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_get_statistics(bad, &statistics));
    }
    /* A context handle where a session belongs. */
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_start((carwindow_session *)context));

    /* A good session, then bad arguments to each function, in the wrong order first. */
    fill(&config, argv[1], paths);
    callback_session = NULL;
    config.on_access_unit = reentrant_access_unit;
    EXPECT(CARWINDOW_OK, carwindow_session_create(context, &config, &session));
    callback_session = session;
    EXPECT(CARWINDOW_OK, carwindow_session_stop(session)); /* stop before start: nothing to do */
    EXPECT(CARWINDOW_ERROR_BUSY, carwindow_context_close(context));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_camera(session, NULL, 0));
    camera.zoom = nan;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_camera(session, &camera, 0));
    camera.zoom = 30;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_camera(session, &camera, 0));
    camera.zoom = 15;
    camera.bearing = INFINITY;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_camera(session, &camera, 0));
    camera.bearing = 0;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_camera(session, &camera, -1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_camera(session, &camera, nan));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_get_camera(session, NULL));
    vehicle.speed = -3;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_vehicle(session, &vehicle));
    vehicle.speed = 10;
    vehicle.position.longitude = 181;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_vehicle(session, &vehicle));
    vehicle.position.longitude = 24.95;
    vehicle.heading = nan;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_vehicle(session, &vehicle));
    vehicle.heading = 90;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_follow_vehicle(session, 2));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_covered_insets(session, -1, 0, 0, 0));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_covered_insets(session, 0, nan, 0, 0));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_covered_insets(session, 0, 0, INFINITY, 0));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_label_language(session, ""));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_label_language(session, "swedish"));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_label_language(session, "sv-SE-x-private-and-then-far-too-long"));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_route(session, NULL, 5));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_route(session, points, (size_t)-1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_route_progress(session, -1));
    {
        carwindow_congestion traffic[2] = {{0, 100, CARWINDOW_CONGESTION_HEAVY}, {100, 200, 7}};
        EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_route_congestion(session, NULL, 2));
        EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_route_congestion(session, traffic, 2));
        EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_route_congestion(session, traffic, (size_t)-1));
    }
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_route_progress(session, nan));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_maneuver(session, INFINITY));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_appearance(session, 5));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_style(session, NULL, NULL));
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_set_style(session, "{\"version\": 8, \"layers\": 5}", NULL));
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_set_style(session, style, "/no/such/night.json"));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_geojson(session, NULL, "{}", 2));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_geojson(session, "carwindow-markers", NULL, 2));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_geojson(session, "carwindow-markers", "{}", (size_t)1 << 40));
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_set_geojson(session, "carwindow-markers", "{\"type\": 3", 10));
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_set_geojson(session, "no-such-source", "{\"type\":\"FeatureCollection\",\"features\":[]}", 42));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_alternatives(session, NULL, counts, 1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_alternatives(session, points, NULL, 1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_alternatives(session, points, counts, 3));
    size_t huge[2] = {(size_t)-1, 4};
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_alternatives(session, points, huge, 2));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_touch(session, NULL));
    touch.type = 9;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_touch(session, &touch));
    touch.type = CARWINDOW_TOUCH_BEGIN;
    touch.points = NULL;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_touch(session, &touch));
    touch.points = &finger;
    touch.count = 11;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_touch(session, &touch));
    touch.count = 0;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_touch(session, &touch)); /* no finger */
    touch.count = 1;
    finger.finger = 12;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_touch(session, &touch));
    finger.finger = 0;
    finger.x = nan;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_touch(session, &touch));
    finger.x = 100;
    finger.timestamp_ms = -5;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_touch(session, &touch));
    finger.timestamp_ms = 10;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_touch_json(session, NULL));
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_touch_json(session, "not json"));
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_touch_json(session, "{\"type\":\"BEGIN\",\"event\":[{\"id\":99,\"ts\":[1],\"c\":[{\"x\":1,\"y\":1}]}]}"));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_haptic_regions(session, NULL, 1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_haptic_regions(session, &region, 5000));
    region.id = 1999999001;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_haptic_regions(session, &region, 1));
    region.id = -4;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_haptic_regions(session, &region, 1));
    region.id = 7;
    region.width = -1;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_haptic_regions(session, &region, 1));
    region.width = nan;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_haptic_regions(session, &region, 1));
    region.width = 50;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_get_haptic_regions(session, NULL, &region_count));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_get_haptic_regions(session, &regions, NULL));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_select_region(session, -1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_select_region(session, (int64_t)1 << 40));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_controls_visible(session, -1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_perform(session, 99));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_get_statistics(session, NULL));
    /* A second session writing the same file: its lock refuses it. */
    carwindow_session *twin = NULL;
    EXPECT(CARWINDOW_ERROR_OUTPUT, carwindow_session_create(context, &config, &twin));

    /* The good path: everything once, while streaming. */
    EXPECT(CARWINDOW_OK, carwindow_session_start(session));
    EXPECT(CARWINDOW_ERROR_INVALID_STATE, carwindow_session_start(session));
    camera.zoom = 15;
    EXPECT(CARWINDOW_OK, carwindow_session_set_camera(session, &camera, 0.5));
    EXPECT(CARWINDOW_OK, carwindow_session_get_camera(session, &camera));
    EXPECT(CARWINDOW_OK, carwindow_session_set_vehicle(session, &vehicle));
    EXPECT(CARWINDOW_OK, carwindow_session_follow_vehicle(session, 1));
    EXPECT(CARWINDOW_OK, carwindow_session_set_covered_insets(session, 0, 200, 60, 0));
    EXPECT(CARWINDOW_OK, carwindow_session_set_label_language(session, "SV-SE"));
    EXPECT(CARWINDOW_OK, carwindow_session_set_label_language(session, NULL));
    EXPECT(CARWINDOW_OK, carwindow_session_set_vehicle(session, &vehicle));
    EXPECT(CARWINDOW_OK, carwindow_session_follow_vehicle(session, 0));
    EXPECT(CARWINDOW_OK, carwindow_session_set_vehicle(session, NULL));
    EXPECT(CARWINDOW_OK, carwindow_session_set_route(session, points, 2));
    EXPECT(CARWINDOW_OK, carwindow_session_set_route(session, NULL, 0));
    EXPECT(CARWINDOW_OK, carwindow_session_set_route(session, points, 2));
    EXPECT(CARWINDOW_OK, carwindow_session_set_route_progress(session, 100));
    {
        carwindow_congestion traffic[2] = {{0, 100, CARWINDOW_CONGESTION_HEAVY}, {100, 200, CARWINDOW_CONGESTION_SEVERE}};
        EXPECT(CARWINDOW_OK, carwindow_session_set_route_congestion(session, traffic, 2));
        EXPECT(CARWINDOW_OK, carwindow_session_set_route_congestion(session, NULL, 0));
    }
    EXPECT(CARWINDOW_OK, carwindow_session_set_maneuver(session, 200));
    EXPECT(CARWINDOW_OK, carwindow_session_set_maneuver(session, -1));
    EXPECT(CARWINDOW_OK, carwindow_session_set_appearance(session, CARWINDOW_APPEARANCE_NIGHT));
    EXPECT(CARWINDOW_OK, carwindow_session_set_style(session, style, NULL));
    const char *markers = "{\"type\":\"FeatureCollection\",\"features\":[{\"type\":\"Feature\",\"properties\":{\"kind\":\"destination\"},"
                          "\"geometry\":{\"type\":\"Point\",\"coordinates\":[24.95,60.17]}}]}";
    EXPECT(CARWINDOW_OK, carwindow_session_set_geojson(session, "carwindow-markers", markers, strlen(markers)));
    EXPECT(CARWINDOW_OK, carwindow_session_set_alternatives(session, points, counts, 1));
    EXPECT(CARWINDOW_OK, carwindow_session_set_alternatives(session, NULL, NULL, 0));
    EXPECT(CARWINDOW_OK, carwindow_session_request_idr(session));
    EXPECT(CARWINDOW_OK, carwindow_session_touch(session, &touch));
    touch.type = CARWINDOW_TOUCH_CANCEL;
    touch.count = 0;
    touch.points = NULL;
    EXPECT(CARWINDOW_OK, carwindow_session_touch(session, &touch));
    EXPECT(CARWINDOW_OK, carwindow_session_touch_json(session, "{\"type\":\"BEGIN\",\"event\":[{\"id\":0,\"ts\":[20],\"c\":[{\"x\":5,\"y\":5}]}]}"));
    EXPECT(CARWINDOW_OK, carwindow_session_touch_json(session, "{\"type\":\"END\",\"event\":[{\"id\":0,\"ts\":[90],\"c\":[{\"x\":5,\"y\":5}]}]}"));
    EXPECT(CARWINDOW_OK, carwindow_session_set_haptic_regions(session, &region, 1));
    EXPECT(CARWINDOW_OK, carwindow_session_select_region(session, 7));
    EXPECT(CARWINDOW_OK, carwindow_session_select_region(session, 12345)); /* not on screen: a warning event */
    EXPECT(CARWINDOW_OK, carwindow_session_set_controls_visible(session, 0));
    EXPECT(CARWINDOW_OK, carwindow_session_set_controls_visible(session, 1));
    /* Custom layers: bad ids and names, then one that is drawn. */
    layered_session = session;
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_add_custom_layer(NULL, "layer", NULL, counting_layer, NULL));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_add_custom_layer(session, NULL, NULL, counting_layer, NULL));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_add_custom_layer(session, "", NULL, counting_layer, NULL));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_add_custom_layer(session, "layer", NULL, NULL, NULL));
    static char long_id[300];
    memset(long_id, 'x', sizeof long_id - 1);
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_add_custom_layer(session, long_id, NULL, counting_layer, NULL));
    EXPECT(CARWINDOW_ERROR_INPUT, carwindow_session_add_custom_layer(session, "layer", "no-such-layer", counting_layer, NULL));
    EXPECT(CARWINDOW_OK, carwindow_session_add_custom_layer(session, "layer", "building", counting_layer, NULL));
    EXPECT(CARWINDOW_OK, carwindow_session_invalidate(session));
    for (int waited = 0; waited < 600 && atomic_load(&layer_calls) == 0; waited++) sleep_ms(50);
    REQUIRE(atomic_load(&layer_calls) > 0);
    REQUIRE(atomic_load(&layer_matrix_ok) == atomic_load(&layer_calls));
    REQUIRE(atomic_load(&layer_api_refusals) == atomic_load(&layer_calls));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_remove_custom_layer(session, NULL));
    EXPECT(CARWINDOW_OK, carwindow_session_remove_custom_layer(session, "layer"));
    EXPECT(CARWINDOW_OK, carwindow_session_remove_custom_layer(session, "layer"));
    carwindow_custom_layer_frame layer_frame;
    memset(&layer_frame, 0, sizeof layer_frame);
    layer_frame.width = 320;
    layer_frame.height = 192;
    layer_frame.camera = (carwindow_camera){{60.17, 24.94}, 15, 0, 0};
    float matrix[16];
    EXPECT(CARWINDOW_OK, carwindow_custom_layer_matrix(&layer_frame, (carwindow_coordinate){60.17, 24.94}, matrix));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_custom_layer_matrix(NULL, (carwindow_coordinate){60.17, 24.94}, matrix));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_custom_layer_matrix(&layer_frame, (carwindow_coordinate){nan, 24.94}, matrix));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_custom_layer_matrix(&layer_frame, (carwindow_coordinate){60.17, 24.94}, NULL));
    layer_frame.width = 0;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_custom_layer_matrix(&layer_frame, (carwindow_coordinate){60.17, 24.94}, matrix));
    for (carwindow_map_command command = CARWINDOW_COMMAND_RECENTER; command <= CARWINDOW_COMMAND_HEADING_TOGGLE; command++) {
        EXPECT(CARWINDOW_OK, carwindow_session_perform(session, command));
    }
    sleep_ms(1500);
    EXPECT(CARWINDOW_OK, carwindow_session_get_haptic_regions(session, &regions, &region_count));
    REQUIRE(region_count >= 1 && regions != NULL);
    carwindow_free(regions);
    EXPECT(CARWINDOW_OK, carwindow_session_get_statistics(session, &statistics));
    REQUIRE(statistics.state == CARWINDOW_STATE_STREAMING && statistics.width == 320 && statistics.frames_rendered > 0);
    REQUIRE(atomic_load(&callback_calls) > 0 && atomic_load(&callback_refusals) == atomic_load(&callback_calls));
    REQUIRE(atomic_load(&log_lines) > 0 && atomic_load(&log_refusals) == atomic_load(&log_lines));
    EXPECT(CARWINDOW_OK, carwindow_set_log(NULL, NULL, CARWINDOW_LOG_WARNING));

    /* Stop, start again (the Annex-B file is appended to), stop twice, close, then use it. */
    EXPECT(CARWINDOW_OK, carwindow_session_stop(session));
    EXPECT(CARWINDOW_OK, carwindow_session_start(session));
    EXPECT(CARWINDOW_OK, carwindow_session_stop(session));
    EXPECT(CARWINDOW_OK, carwindow_session_stop(session));
    EXPECT(CARWINDOW_OK, carwindow_session_close(session));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_close(session));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_start(session));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_set_camera(session, &camera, 0));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_get_statistics(session, &statistics));

    /* The screen from an SDL capability (scale 1.5), streamed over RTP with its SDP file. */
    char sdp[4096];
    snprintf(sdp, sizeof sdp, "%s/bad-arguments.sdp", argv[2]);
    fill(&config, argv[1], paths);
    config.annexb_path = NULL;
    config.rtp_host = "127.0.0.1";
    config.rtp_port = 9; /* discard: nothing listens, and UDP does not care */
    config.sdp_path = sdp;
    config.capability_json = "{\"preferredResolution\": {\"resolutionWidth\": 480, \"resolutionHeight\": 320}, \"scale\": 1.5, "
                             "\"maxBitrate\": 400, \"preferredFPS\": 10}";
    carwindow_session *rtp = NULL;
    EXPECT(CARWINDOW_OK, carwindow_session_create(context, &config, &rtp));
    EXPECT(CARWINDOW_OK, carwindow_session_start(rtp));
    EXPECT(CARWINDOW_OK, carwindow_session_get_statistics(rtp, &statistics));
    REQUIRE(statistics.width == 320 && statistics.frames_per_second == 10 && statistics.bitrate <= 400000);
    EXPECT(CARWINDOW_OK, carwindow_session_close(rtp));
    FILE *sdp_file = fopen(sdp, "r");
    REQUIRE(sdp_file != NULL);
    if (sdp_file) fclose(sdp_file);

    /* The engine's own content: what the config must say about it. */
    fill(&config, argv[1], paths);
    config.content = 3;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    config.content = CARWINDOW_CONTENT_GL; /* without on_draw */
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    REQUIRE(strstr(carwindow_last_error_message(), "on_draw") != NULL);
    config.content = CARWINDOW_CONTENT_PIXELS;
    config.on_draw = refusing_draw; /* a draw for content that is not GL */
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    /* A caller of minor version 2 (without content): the 3 beyond its struct is never read. */
    fill(&config, argv[1], paths);
    config.content = 3;
    config.min_width = 2000;
    config.max_width = 1000;
    config.struct_size = offsetof(carwindow_session_config, content);
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    REQUIRE(strstr(carwindow_last_error_message(), "smallest size") != NULL);
    /* A caller of minor versions 3 to 7 (without cache_path): the bad pointer beyond its
       struct is never read. */
    fill(&config, argv[1], paths);
    config.cache_path = (const char *)(uintptr_t)1;
    config.min_width = 2000;
    config.max_width = 1000;
    config.struct_size = offsetof(carwindow_session_config, cache_path);
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_create(context, &config, &session));
    REQUIRE(strstr(carwindow_last_error_message(), "smallest size") != NULL);

    /* Pixels: a session without the map's inputs, and pixels that do not fit. */
    fill(&config, argv[1], paths);
    config.tiles_path = NULL;
    config.style = NULL;
    config.fonts_path = NULL;
    config.content = CARWINDOW_CONTENT_PIXELS;
    config.annexb_path = third;
    config.width = 64;
    config.height = 48;
    carwindow_session *pixels = NULL;
    EXPECT(CARWINDOW_OK, carwindow_session_create(context, &config, &pixels));
    static uint8_t picture[64 * 48 * 4];
    memset(picture, 0x80, sizeof picture);
    EXPECT(CARWINDOW_ERROR_INVALID_STATE, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_RGBA, 64, 48, 256, picture, sizeof picture));
    EXPECT(CARWINDOW_OK, carwindow_session_start(pixels));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_push_pixels(NULL, CARWINDOW_PIXELS_RGBA, 64, 48, 256, picture, sizeof picture));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_RGBA, 64, 48, 256, NULL, sizeof picture));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, 9, 64, 48, 256, picture, sizeof picture));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_BGRA, 32, 48, 128, picture, sizeof picture));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_BGRA, 64, 48, 128, picture, sizeof picture));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_BGRA, 64, 48, 258, picture, sizeof picture));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_BGRA, 64, 48, 256, picture, sizeof picture - 1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_BGRA, 64, 48, (size_t)-4, picture, sizeof picture));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_BGRA, 64, 48, 256, picture, (size_t)-1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_set_continuous(pixels, 2));
    EXPECT(CARWINDOW_ERROR_INVALID_STATE, carwindow_session_add_custom_layer(pixels, "layer", NULL, counting_layer, NULL));
    /* NV12 and I420 in one packed buffer: 64 * 48 luma bytes, then 64 * 24 of chroma. */
    EXPECT(CARWINDOW_OK, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_NV12, 64, 48, 64, picture, 64 * 72));
    EXPECT(CARWINDOW_OK, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_I420, 64, 48, 64, picture, 64 * 72));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_NV12, 64, 48, 64, picture, 64 * 72 - 1));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_I420, 64, 48, 63, picture, 64 * 72));
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_I420, 64, 48, (size_t)-2, picture, 64 * 72));
    /* dma-bufs: every refusal before anything is duplicated; a plain file stands in for one. */
    FILE *stand_in = tmpfile();
    REQUIRE(stand_in != NULL && fwrite(picture, 1, sizeof picture, stand_in) == sizeof picture && fflush(stand_in) == 0);
    carwindow_dmabuf buffer = {.fourcc = 0x34324241 /* AB24 */, .width = 64, .height = 48, .plane_count = 1,
                               .fds = {fileno(stand_in), -1}, .offsets = {0, 0}, .strides = {256, 0},
                               .modifier = 0x00ffffffffffffffULL, .bottom_first = 0};
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_dmabuf(pixels, NULL));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_push_dmabuf(NULL, &buffer));
    carwindow_dmabuf bad = buffer;
    bad.fourcc = 0x56595559; /* YUYV */
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_dmabuf(pixels, &bad));
    bad = buffer;
    bad.plane_count = 2;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_dmabuf(pixels, &bad));
    bad = buffer;
    bad.fds[0] = -1;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_dmabuf(pixels, &bad));
    bad = buffer;
    bad.fds[0] = 1000000;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_dmabuf(pixels, &bad));
    bad = buffer;
    bad.strides[0] = 128;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_dmabuf(pixels, &bad));
    bad = buffer;
    bad.offsets[0] = 0xffffffffu;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_dmabuf(pixels, &bad));
    bad = buffer;
    bad.width = 32;
    EXPECT(CARWINDOW_ERROR_INVALID_ARGUMENT, carwindow_session_push_dmabuf(pixels, &bad));
    EXPECT(CARWINDOW_OK, carwindow_session_push_dmabuf(pixels, &buffer));
    fclose(stand_in);
    REQUIRE(carwindow_context_imports_dmabufs(NULL) == 0);
    REQUIRE(carwindow_context_imports_dmabufs(context) == 0 || carwindow_context_imports_dmabufs(context) == 1);
    EXPECT(CARWINDOW_OK, carwindow_session_push_pixels(pixels, CARWINDOW_PIXELS_BGRA, 64, 48, 256, picture, sizeof picture));
    EXPECT(CARWINDOW_OK, carwindow_session_set_continuous(pixels, 1));
    sleep_ms(300);
    EXPECT(CARWINDOW_OK, carwindow_session_set_continuous(pixels, 0));
    EXPECT(CARWINDOW_OK, carwindow_session_invalidate(pixels));
    /* Polled, with a hang guard: under valgrind a picture takes a while. */
    for (int waited = 0; waited < 600; waited++) {
        EXPECT(CARWINDOW_OK, carwindow_session_get_statistics(pixels, &statistics));
        if (statistics.frames_rendered > 0) break;
        sleep_ms(50);
    }
    REQUIRE(statistics.frames_rendered > 0);
    EXPECT(CARWINDOW_OK, carwindow_session_close(pixels));

    /* GL: a draw callback that calls the API from the render thread and refuses its pictures. */
    config.content = CARWINDOW_CONTENT_GL;
    config.on_draw = refusing_draw;
    EXPECT(CARWINDOW_OK, carwindow_session_create(context, &config, &drawing_session));
    EXPECT(CARWINDOW_ERROR_INVALID_STATE, carwindow_session_push_pixels(drawing_session, CARWINDOW_PIXELS_RGBA, 64, 48, 256, picture, sizeof picture));
    EXPECT(CARWINDOW_OK, carwindow_session_start(drawing_session));
    for (int waited = 0; waited < 200 && atomic_load(&draw_calls) == 0; waited++) sleep_ms(50);
    EXPECT(CARWINDOW_OK, carwindow_session_close(drawing_session));
    REQUIRE(atomic_load(&draw_calls) > 0 && atomic_load(&draw_api_refusals) == atomic_load(&draw_calls));

    /* A session closed by its own event callback, which also calls into the API first. The
       callback finds the handle through user_data, filled in before start. */
    fill(&config, argv[1], paths);
    config.annexb_path = second;
    static carwindow_session *self_closing;
    config.on_event = closing_event_handler;
    config.event_user_data = &self_closing;
    EXPECT(CARWINDOW_OK, carwindow_session_create(context, &config, &self_closing));
    EXPECT(CARWINDOW_OK, carwindow_session_start(self_closing));
    for (int waited = 0; waited < 200 && !atomic_load(&closed_from_callback); waited++) sleep_ms(50);
    REQUIRE(atomic_load(&closed_from_callback) == 1);
    REQUIRE(atomic_load(&calls_from_callback_ok) == 1);
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_stop(self_closing));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_close(self_closing));

    EXPECT(CARWINDOW_OK, carwindow_context_close(context));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_context_close(context));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_context_describe(context, &text));
    EXPECT(CARWINDOW_ERROR_INVALID_HANDLE, carwindow_session_create(context, &config, &session));

    printf("bad_arguments: %d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
