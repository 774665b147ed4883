/*
 * A navigation engine in C that draws its screen with Cairo, on the CPU, and hands each picture
 * to CarWindow as pixels: one upload, then the same GPU conversion, encoder and head-unit link as
 * CarWindow's own map.
 *
 * The screen: a turn card (a blue panel with the distance to the next turn, counting down) over
 * a dark background, and an arrival bar along the bottom. The engine draws only when something
 * changed (the distance, every 200 ms for a few seconds), then stops; the library keeps the last
 * picture alive.
 *
 *   cc cairo-engine.c $(pkg-config --cflags --libs carwindow cairo) -o cairo-engine
 *   ./cairo-engine OUT.h264 [SDL_HOST:PORT [SECONDS]]
 *
 * Without a head unit it streams 640x384 into OUT.h264. Exit status: 0 when every picture was
 * taken, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L
#include <carwindow.h>
#include <cairo.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct engine {
    atomic_int streaming;
    atomic_uint width, height; /* the stream's encoded size, from its STREAM_STARTED event */
    atomic_int started;        /* counts STREAM_STARTED events: a new size means new pixels */
};

static void on_event(const carwindow_event *event, void *user_data) {
    struct engine *engine = user_data;
    printf("event: %s\n", event->message);
    if (event->type == CARWINDOW_EVENT_STREAM_STARTED) {
        atomic_store(&engine->width, event->width);
        atomic_store(&engine->height, event->height);
        atomic_fetch_add(&engine->started, 1);
    } else if (event->type == CARWINDOW_EVENT_STATE_CHANGED) {
        atomic_store(&engine->streaming, event->state_to == CARWINDOW_STATE_STREAMING);
    }
}

static void check(carwindow_status status, const char *call) {
    if (status == CARWINDOW_OK) return;
    fprintf(stderr, "cairo-engine: %s failed: %s: %s\n", call, carwindow_status_name(status), carwindow_last_error_message());
    exit(1);
}

static void sleep_ms(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

/* Draws the screen for `metres` to the next turn into `surface`. */
static void draw(cairo_surface_t *surface, int metres) {
    cairo_t *cr = cairo_create(surface);
    double width = cairo_image_surface_get_width(surface), height = cairo_image_surface_get_height(surface);
    cairo_set_source_rgb(cr, 0.12, 0.12, 0.14);
    cairo_paint(cr);

    /* The turn card: left half, rounded. */
    double x = width * 0.05, y = height * 0.08, w = width * 0.45, h = height * 0.5, r = height * 0.05;
    cairo_new_sub_path(cr);
    cairo_arc(cr, x + w - r, y + r, r, -1.5708, 0);
    cairo_arc(cr, x + w - r, y + h - r, r, 0, 1.5708);
    cairo_arc(cr, x + r, y + h - r, r, 1.5708, 3.1416);
    cairo_arc(cr, x + r, y + r, r, 3.1416, 4.7124);
    cairo_close_path(cr);
    cairo_set_source_rgb(cr, 0.1, 0.35, 0.8);
    cairo_fill(cr);

    char distance[32];
    snprintf(distance, sizeof distance, "%d m", metres);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    cairo_set_font_size(cr, height * 0.12);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_move_to(cr, x + w * 0.1, y + h * 0.6);
    cairo_show_text(cr, distance);

    /* The arrival bar. */
    cairo_rectangle(cr, 0, height * 0.88, width, height * 0.12);
    cairo_set_source_rgb(cr, 0.95, 0.75, 0.1);
    cairo_fill(cr);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s OUT.h264 [SDL_HOST:PORT [SECONDS]]\n", argv[0]);
        return 64;
    }
    char sdl_host[256] = "";
    long sdl_port = 0;
    if (argc > 2) {
        const char *colon = strrchr(argv[2], ':');
        sdl_port = colon ? strtol(colon + 1, NULL, 10) : 0;
        if (!colon || colon == argv[2] || (size_t)(colon - argv[2]) >= sizeof sdl_host || sdl_port < 1 || sdl_port > 65535) {
            fprintf(stderr, "cairo-engine: the head unit must be HOST:PORT, port 1...65535 (got %s)\n", argv[2]);
            return 64;
        }
        memcpy(sdl_host, argv[2], (size_t)(colon - argv[2]));
    }
    double seconds = argc > 3 ? atof(argv[3]) : 4;
    if (!(seconds >= 1 && seconds <= 600)) {
        fprintf(stderr, "cairo-engine: SECONDS must be 1...600\n");
        return 64;
    }
    if (carwindow_api_version() >> 16 != CARWINDOW_API_VERSION_MAJOR || (carwindow_api_version() & 0xffff) < 3) {
        fprintf(stderr, "cairo-engine: the loaded library is older than this header's engine content (minor 3)\n");
        return 1;
    }

    static struct engine engine;
    check(carwindow_set_log(NULL, NULL, CARWINDOW_LOG_WARNING), "carwindow_set_log");
    carwindow_context *context = NULL;
    check(carwindow_context_create(NULL, &context), "carwindow_context_create");
    carwindow_session_config config;
    carwindow_session_config_init(&config);
    config.name = "cairo-engine";
    config.content = CARWINDOW_CONTENT_PIXELS;
    config.width = 640;
    config.height = 384;
    config.encoder = CARWINDOW_ENCODER_OPENH264;
    config.on_event = on_event;
    config.event_user_data = &engine;
    if (sdl_port != 0) {
        config.sdl_host = sdl_host;
        config.sdl_port = (uint16_t)sdl_port;
        config.sdl_app_name = "CarWindow Cairo engine";
        config.sdl_app_id = "carwindow-cairo-engine";
    } else {
        config.annexb_path = argv[1];
    }
    carwindow_session *session = NULL;
    check(carwindow_session_create(context, &config, &session), "carwindow_session_create");
    check(carwindow_session_start(session), "carwindow_session_start");
    for (int waited = 0; !atomic_load(&engine.streaming) && waited < 300; waited++) sleep_ms(100);
    if (!atomic_load(&engine.streaming)) {
        fprintf(stderr, "cairo-engine: the head unit did not let the app stream within 30 s\n");
        return 1;
    }

    /* RGB24 is B, G, R, padding in memory on a little-endian machine: CARWINDOW_PIXELS_BGRA. */
    cairo_surface_t *surface = NULL;
    int drawn_for = 0, pushed = 0;
    int steps = (int)(seconds * 5);
    for (int step = 0; step <= steps; step++) {
        if (atomic_load(&engine.started) != drawn_for) {
            /* The stream (re)started, perhaps at another size: draw at the size it has now. */
            drawn_for = atomic_load(&engine.started);
            if (surface) cairo_surface_destroy(surface);
            surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)atomic_load(&engine.width),
                                                 (int)atomic_load(&engine.height));
        }
        draw(surface, 500 - step * 500 / steps);
        int stride = cairo_image_surface_get_stride(surface), height = cairo_image_surface_get_height(surface);
        check(carwindow_session_push_pixels(session, CARWINDOW_PIXELS_BGRA, (uint32_t)cairo_image_surface_get_width(surface),
                                            (uint32_t)height, (size_t)stride, cairo_image_surface_get_data(surface),
                                            (size_t)stride * (size_t)height),
              "carwindow_session_push_pixels");
        pushed++;
        sleep_ms(200);
    }
    /* Still: the library sharpens the last picture and keeps it alive. */
    sleep_ms(1500);

    carwindow_statistics statistics;
    check(carwindow_session_get_statistics(session, &statistics), "carwindow_session_get_statistics");
    check(carwindow_session_stop(session), "carwindow_session_stop");
    check(carwindow_session_close(session), "carwindow_session_close");
    check(carwindow_context_close(context), "carwindow_context_close");
    cairo_surface_destroy(surface);
    printf("cairo-engine: %d pictures pushed; %lld frames, %lld refinements, %lld keep-alives, %lld bytes\n", pushed,
           (long long)statistics.frames_rendered, (long long)statistics.refinement_frames,
           (long long)statistics.keep_alives, (long long)statistics.bytes_sent);
    return statistics.frames_rendered > 0 ? 0 : 1;
}
