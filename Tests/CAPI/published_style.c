/*
 * A style as published, through the C API: no tiles_path, so the session reads every vector
 * source as the style names it (here a PMTiles archive on a local server) and fetches the
 * style's sprite from the server, both through the disk cache in cache_path.
 *
 * usage: published-style STYLE FONTS CACHE OUT.h264
 * Prints "created" and then "pictures N" after about two seconds of a turning camera, or
 * "create failed: STATUS: MESSAGE" and exits 3 when carwindow_session_create refuses.
 * scripts/c-api.sh runs it with the server up, with the server gone (the cache serves), and
 * with the server gone and an empty cache (an INPUT error naming the source).
 */
#define _POSIX_C_SOURCE 200809L
#include <carwindow.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void check(carwindow_status status, const char *call) {
    if (status == CARWINDOW_OK) return;
    fprintf(stderr, "published-style: %s failed: %s: %s\n", call, carwindow_status_name(status), carwindow_last_error_message());
    exit(1);
}

static void sleep_ms(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s STYLE FONTS CACHE OUT.h264\n", argv[0]);
        return 64;
    }
    check(carwindow_set_log(NULL, NULL, CARWINDOW_LOG_WARNING), "carwindow_set_log");
    carwindow_context *context = NULL;
    check(carwindow_context_create(NULL, &context), "carwindow_context_create");

    carwindow_session_config config;
    carwindow_session_config_init(&config);
    config.tiles_path = NULL;
    config.style = argv[1];
    config.fonts_path = argv[2];
    config.cache_path = argv[3];
    config.annexb_path = argv[4];
    config.width = 320;
    config.height = 192;
    config.camera = (carwindow_camera){{60.1699, 24.9384}, 15, 0, 0};
    carwindow_session *session = NULL;
    carwindow_status status = carwindow_session_create(context, &config, &session);
    if (status != CARWINDOW_OK) {
        printf("create failed: %s: %s\n", carwindow_status_name(status), carwindow_last_error_message());
        carwindow_context_close(context);
        return 3;
    }
    printf("created\n");
    check(carwindow_session_start(session), "carwindow_session_start");
    for (int step = 0; step < 20; step++) {
        carwindow_camera camera = {{60.1699, 24.9384}, 15, step * 4.0, 0};
        check(carwindow_session_set_camera(session, &camera, 0), "carwindow_session_set_camera");
        sleep_ms(100);
    }
    carwindow_statistics statistics;
    check(carwindow_session_get_statistics(session, &statistics), "carwindow_session_get_statistics");
    check(carwindow_session_stop(session), "carwindow_session_stop");
    check(carwindow_session_close(session), "carwindow_session_close");
    check(carwindow_context_close(context), "carwindow_context_close");
    printf("pictures %lld\n", (long long)statistics.frames_rendered);
    return statistics.frames_rendered > 0 ? 0 : 1;
}
