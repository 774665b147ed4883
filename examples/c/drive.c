/*
 * A navigation engine in C driving CarWindow: it opens the bundled Helsinki data, streams a short
 * drive into an Annex-B file and an MP4 file (and counts the pictures its own callback gets),
 * taps the map's zoom-in control the way a head unit's touch would, and prints every event.
 * Given a SmartDeviceLink head unit (HOST:PORT: SDL Core, or `carwindow headunit`), it streams
 * into that as well, at the size and rate the head unit asks for, once the head unit lets it.
 *
 *   cc drive.c $(pkg-config --cflags --libs carwindow) -lm -pthread -o drive
 *   ./drive ASSETS_FOLDER OUT_FOLDER [SECONDS [SDL_HOST:PORT]]
 *
 * Exit status: 0 when the drive streamed and the tap zoomed in, 1 otherwise.
 */
/* M_PI and nanosleep are POSIX, not ISO C. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700
#include <carwindow.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What the callbacks saw; they run on the library's threads. */
struct engine {
    pthread_mutex_t lock;
    int have_zoom_in;                  /* the zoom-in control's region arrived */
    carwindow_haptic_region zoom_in;   /* in head-unit pixels */
    atomic_int zoomed_in;              /* CARWINDOW_EVENT_CONTROL_TAPPED for zoom in */
    atomic_long units, idrs, bytes;    /* what the access-unit callback received */
};

/* The id the library gives the zoom-in control's haptic region (see carwindow.h). */
#define ZOOM_IN_REGION 1999999001

static void on_event(const carwindow_event *event, void *user_data) {
    struct engine *engine = user_data;
    printf("event: %s\n", event->message);
    if (event->type == CARWINDOW_EVENT_HAPTIC_REGIONS) {
        pthread_mutex_lock(&engine->lock);
        for (size_t i = 0; i < event->region_count; i++) {
            if (event->regions[i].id == ZOOM_IN_REGION) {
                engine->zoom_in = event->regions[i];
                engine->have_zoom_in = 1;
            }
        }
        pthread_mutex_unlock(&engine->lock);
    } else if (event->type == CARWINDOW_EVENT_CONTROL_TAPPED && event->control == CARWINDOW_CONTROL_ZOOM_IN) {
        atomic_store(&engine->zoomed_in, 1);
    }
}

static int on_access_unit(const uint8_t *data, size_t size, int64_t pts_us, int32_t is_idr, void *user_data) {
    struct engine *engine = user_data;
    (void)data;
    (void)pts_us;
    atomic_fetch_add(&engine->units, 1);
    atomic_fetch_add(&engine->bytes, (long)size);
    if (is_idr) atomic_fetch_add(&engine->idrs, 1);
    return 0;
}

/* Prints the failed call with the library's message and leaves. */
static void check(carwindow_status status, const char *call) {
    if (status == CARWINDOW_OK) return;
    fprintf(stderr, "drive: %s failed: %s: %s\n", call, carwindow_status_name(status), carwindow_last_error_message());
    exit(1);
}

static void sleep_ms(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

/* Along Unioninkatu from Kasarmitori towards Hakaniemi. */
static const carwindow_coordinate route[] = {
    {60.16560, 24.94880}, {60.16680, 24.95100}, {60.17000, 24.95150}, {60.17300, 24.95250},
    {60.17600, 24.95200}, {60.17860, 24.95060},
};
#define ROUTE_POINTS (sizeof route / sizeof route[0])

static double metres_between(carwindow_coordinate a, carwindow_coordinate b) {
    const double radians = M_PI / 180, earth = 6371000;
    double x = (b.longitude - a.longitude) * radians * cos((a.latitude + b.latitude) / 2 * radians);
    double y = (b.latitude - a.latitude) * radians;
    return sqrt(x * x + y * y) * earth;
}

/* The point `metres` along the route, with the heading there. */
static carwindow_vehicle vehicle_at(double metres, double speed) {
    for (size_t i = 0; i + 1 < ROUTE_POINTS; i++) {
        double leg = metres_between(route[i], route[i + 1]);
        if (metres <= leg || i + 2 == ROUTE_POINTS) {
            double t = leg > 0 ? fmin(metres / leg, 1) : 0;
            carwindow_vehicle vehicle;
            vehicle.position.latitude = route[i].latitude + (route[i + 1].latitude - route[i].latitude) * t;
            vehicle.position.longitude = route[i].longitude + (route[i + 1].longitude - route[i].longitude) * t;
            double east = (route[i + 1].longitude - route[i].longitude) * cos(route[i].latitude * M_PI / 180);
            double north = route[i + 1].latitude - route[i].latitude;
            vehicle.heading = fmod(atan2(east, north) * 180 / M_PI + 360, 360);
            vehicle.speed = speed;
            return vehicle;
        }
        metres -= leg;
    }
    return (carwindow_vehicle){route[0], 0, 0};
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s ASSETS_FOLDER OUT_FOLDER [SECONDS [SDL_HOST:PORT]]\n", argv[0]);
        return 64;
    }
    const char *assets = argv[1], *out = argv[2];
    double seconds = argc > 3 ? atof(argv[3]) : 6;
    if (!(seconds >= 1 && seconds <= 600)) {
        fprintf(stderr, "drive: SECONDS must be 1...600\n");
        return 64;
    }
    char sdl_host[256] = "";
    long sdl_port = 0;
    if (argc > 4) {
        const char *colon = strrchr(argv[4], ':');
        sdl_port = colon ? strtol(colon + 1, NULL, 10) : 0;
        if (!colon || colon == argv[4] || (size_t)(colon - argv[4]) >= sizeof sdl_host || sdl_port < 1 || sdl_port > 65535) {
            fprintf(stderr, "drive: the head unit must be HOST:PORT, port 1...65535 (got %s)\n", argv[4]);
            return 64;
        }
        memcpy(sdl_host, argv[4], (size_t)(colon - argv[4]));
    }
    if (carwindow_api_version() >> 16 != CARWINDOW_API_VERSION_MAJOR) {
        fprintf(stderr, "drive: the loaded library is of another major version\n");
        return 1;
    }

    char tiles[4096], style[4096], night[4096], fonts[4096], annexb[4096], mp4[4096];
    snprintf(tiles, sizeof tiles, "%s/helsinki.pmtiles", assets);
    snprintf(style, sizeof style, "%s/styles/day.json", assets);
    snprintf(night, sizeof night, "%s/styles/night.json", assets);
    snprintf(fonts, sizeof fonts, "%s/fonts", assets);
    snprintf(annexb, sizeof annexb, "%s/c-drive.h264", out);
    snprintf(mp4, sizeof mp4, "%s/c-drive.mp4", out);

    struct engine engine = {.lock = PTHREAD_MUTEX_INITIALIZER};
    /* The library's own log: warnings and errors to standard error; the events tell the rest. */
    check(carwindow_set_log(NULL, NULL, CARWINDOW_LOG_WARNING), "carwindow_set_log");

    carwindow_context *context = NULL;
    check(carwindow_context_create(NULL, &context), "carwindow_context_create");
    char *description = NULL;
    check(carwindow_context_describe(context, &description), "carwindow_context_describe");
    printf("context: %s\n", description);
    carwindow_free(description);

    carwindow_session_config config;
    carwindow_session_config_init(&config);
    config.name = "c-drive";
    config.tiles_path = tiles;
    config.style = style;
    config.night_style = night;
    config.fonts_path = fonts;
    config.camera = (carwindow_camera){route[0], 16.5, 0, 45};
    config.width = 800;
    config.height = 480;
    config.frames_per_second = 15;
    config.encoder = CARWINDOW_ENCODER_OPENH264;
    config.annexb_path = annexb;
    config.mp4_path = mp4;
    config.on_access_unit = on_access_unit;
    config.access_unit_user_data = &engine;
    config.on_event = on_event;
    config.event_user_data = &engine;
    if (sdl_port != 0) {
        config.sdl_host = sdl_host;
        config.sdl_port = (uint16_t)sdl_port;
        config.sdl_app_name = "CarWindow C";
        config.sdl_app_id = "carwindow-c-drive";
    }

    carwindow_session *session = NULL;
    check(carwindow_session_create(context, &config, &session), "carwindow_session_create");
    check(carwindow_session_set_route(session, route, ROUTE_POINTS), "carwindow_session_set_route");
    check(carwindow_session_follow_vehicle(session, 1), "carwindow_session_follow_vehicle");
    check(carwindow_session_start(session), "carwindow_session_start");
    if (sdl_port != 0) {
        /* The head unit decides when video may flow: wait for it (the events tell why not). */
        carwindow_statistics now;
        int waited = 0;
        do {
            sleep_ms(100);
            check(carwindow_session_get_statistics(session, &now), "carwindow_session_get_statistics");
        } while (now.state != CARWINDOW_STATE_STREAMING && ++waited < 300);
        if (now.state != CARWINDOW_STATE_STREAMING) {
            fprintf(stderr, "drive: the head unit at %s did not let the app stream within 30 s\n", argv[4]);
            carwindow_session_close(session);
            carwindow_context_close(context);
            return 1;
        }
    }

    /* The engine's positioning: a fix every 100 ms, the car at 12 m/s. */
    const double speed = 12;
    int tapped = 0;
    int steps = (int)(seconds * 10);
    for (int step = 0; step <= steps; step++) {
        double metres = step * 0.1 * speed;
        carwindow_vehicle vehicle = vehicle_at(metres, speed);
        check(carwindow_session_set_vehicle(session, &vehicle), "carwindow_session_set_vehicle");
        check(carwindow_session_set_route_progress(session, metres), "carwindow_session_set_route_progress");

        /* Half way: the driver taps zoom in, as the head unit's touch screen reports it. */
        pthread_mutex_lock(&engine.lock);
        int ready = engine.have_zoom_in;
        carwindow_haptic_region zoom_in = engine.zoom_in;
        pthread_mutex_unlock(&engine.lock);
        if (!tapped && ready && step >= steps / 2) {
            carwindow_touch_point finger = {0, 1000, zoom_in.x + zoom_in.width / 2, zoom_in.y + zoom_in.height / 2};
            carwindow_touch_event touch = {CARWINDOW_TOUCH_BEGIN, &finger, 1};
            check(carwindow_session_touch(session, &touch), "carwindow_session_touch (begin)");
            finger.timestamp_ms += 80;
            touch.type = CARWINDOW_TOUCH_END;
            check(carwindow_session_touch(session, &touch), "carwindow_session_touch (end)");
            printf("engine: tapped zoom in at (%.0f, %.0f)\n", finger.x, finger.y);
            tapped = 1;
        }
        sleep_ms(100);
    }
    /* A still moment: the picture sharpens, then keep-alives. */
    sleep_ms(1500);

    carwindow_statistics statistics;
    check(carwindow_session_get_statistics(session, &statistics), "carwindow_session_get_statistics");
    check(carwindow_session_stop(session), "carwindow_session_stop");
    check(carwindow_session_close(session), "carwindow_session_close");
    check(carwindow_context_close(context), "carwindow_context_close");

    printf("stream: %ux%u at %.0f fps, %lld bit/s\n", statistics.width, statistics.height, statistics.frames_per_second,
           (long long)statistics.bitrate);
    printf("frames: %lld drawn, %lld refinements, %lld keep-alives, %lld IDR; %lld bytes in %.1f s\n",
           (long long)statistics.frames_rendered, (long long)statistics.refinement_frames,
           (long long)statistics.keep_alives, (long long)statistics.idr_frames, (long long)statistics.bytes_sent,
           statistics.streaming_seconds);
    printf("callback: %ld access units, %ld IDR, %ld bytes\n", atomic_load(&engine.units), atomic_load(&engine.idrs),
           atomic_load(&engine.bytes));
    printf("wrote %s and %s\n", annexb, mp4);
    if (!tapped || !atomic_load(&engine.zoomed_in)) {
        fprintf(stderr, "drive: the zoom-in tap did not reach the map (tapped %d)\n", tapped);
        return 1;
    }
    if (statistics.frames_rendered == 0 || atomic_load(&engine.units) == 0) {
        fprintf(stderr, "drive: nothing was streamed\n");
        return 1;
    }
    return 0;
}
