/*
 * A navigation engine in C that draws its own screen with its own OpenGL ES shaders, projected
 * through CarWindow without CarWindow's map: the library calls on_draw on its render thread with
 * its context current, and converts, encodes and sends what the engine drew.
 *
 * The screen: a dark background, an orange arrow (the next turn) in the middle, a progress bar
 * that grows while the engine animates, and a button at the bottom right. The button is declared
 * as a haptic rectangle; when the head unit taps it, the button turns green. Between changes the
 * engine asks for nothing and the library sends only keep-alives.
 *
 *   cc gl-engine.c $(pkg-config --cflags --libs carwindow glesv2) -pthread -o gl-engine
 *   ./gl-engine OUT.h264 [SDL_HOST:PORT [SECONDS]]
 *
 * Without a head unit it streams 640x384 into OUT.h264 and taps the button itself. Exit status:
 * 0 when the pictures were drawn and the tap reached the engine, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L
#include <carwindow.h>
#include <GLES3/gl3.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The engine's own haptic rectangle. */
#define BUTTON_REGION 7

/* What the render thread and the engine's thread share. */
struct engine {
    /* Render thread only: the GL objects, made on the first draw (in the library's context). */
    GLuint program, vertex_array, buffer;
    GLint colour, offset, scale;
    /* Set by the engine's thread, read by the draw. */
    atomic_int button_pressed;
    atomic_int progress_percent;
    /* Set by the callbacks, read by main. */
    atomic_int draws, failed_draws, tapped, streaming;
    atomic_uint width, height;
};

static const char *vertex_source =
    "#version 300 es\n"
    "layout(location = 0) in vec2 position;\n"
    "uniform vec2 u_offset;\n"
    "uniform vec2 u_scale;\n"
    "void main() { gl_Position = vec4(position * u_scale + u_offset, 0.0, 1.0); }\n";

static const char *fragment_source =
    "#version 300 es\n"
    "precision mediump float;\n"
    "uniform vec4 u_colour;\n"
    "out vec4 colour;\n"
    "void main() { colour = u_colour; }\n";

/* An arrow pointing up (a triangle on a stem), then a unit square: clip space, -1...1. */
static const GLfloat shapes[] = {
    -0.5f, 0.0f, 0.5f, 0.0f, 0.0f, 0.8f,                           /* head */
    -0.18f, -0.8f, 0.18f, -0.8f, 0.18f, 0.0f,                       /* stem */
    -0.18f, -0.8f, 0.18f, 0.0f, -0.18f, 0.0f,
    0.0f, 0.0f, 1.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 1.0f, /* square */
};

static GLuint compile(GLenum type, const char *source) {
    GLuint shader = glCreateShader(type);
    glShaderSource(shader, 1, &source, NULL);
    glCompileShader(shader);
    GLint ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[1024];
        glGetShaderInfoLog(shader, sizeof log, NULL, log);
        fprintf(stderr, "gl-engine: shader: %s\n", log);
        glDeleteShader(shader);
        return 0;
    }
    return shader;
}

/* Makes the program and the shapes' buffer; 0 on success. */
static int prepare(struct engine *engine) {
    GLuint vertex = compile(GL_VERTEX_SHADER, vertex_source), fragment = compile(GL_FRAGMENT_SHADER, fragment_source);
    if (!vertex || !fragment) return 1;
    engine->program = glCreateProgram();
    glAttachShader(engine->program, vertex);
    glAttachShader(engine->program, fragment);
    glLinkProgram(engine->program);
    glDeleteShader(vertex);
    glDeleteShader(fragment);
    GLint ok = 0;
    glGetProgramiv(engine->program, GL_LINK_STATUS, &ok);
    if (!ok) return 1;
    engine->colour = glGetUniformLocation(engine->program, "u_colour");
    engine->offset = glGetUniformLocation(engine->program, "u_offset");
    engine->scale = glGetUniformLocation(engine->program, "u_scale");
    glGenVertexArrays(1, &engine->vertex_array);
    glBindVertexArray(engine->vertex_array);
    glGenBuffers(1, &engine->buffer);
    glBindBuffer(GL_ARRAY_BUFFER, engine->buffer);
    glBufferData(GL_ARRAY_BUFFER, sizeof shapes, shapes, GL_STATIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, NULL);
    return 0;
}

/* A rectangle in pixels from the top left, as the haptic rectangles are given. */
static void draw_rectangle(const struct engine *engine, const carwindow_gl_frame *frame, float x, float y, float width,
                           float height, float r, float g, float b) {
    float w = (float)frame->width, h = (float)frame->height;
    glUniform4f(engine->colour, r, g, b, 1);
    glUniform2f(engine->scale, 2 * width / w, 2 * height / h);
    /* GL's y runs up: the rectangle's bottom edge, in clip space. */
    glUniform2f(engine->offset, 2 * x / w - 1, 1 - 2 * (y + height) / h);
    glDrawArrays(GL_TRIANGLES, 9, 6);
}

/* The button's rectangle in picture pixels: bottom right, a fifth of the width. */
static carwindow_haptic_region button(uint32_t width, uint32_t height) {
    carwindow_haptic_region region = {BUTTON_REGION, width * 0.75, height * 0.75, width * 0.2, height * 0.15};
    return region;
}

static int on_draw(const carwindow_gl_frame *frame, void *user_data) {
    struct engine *engine = user_data;
    if (!engine->program && prepare(engine) != 0) {
        atomic_fetch_add(&engine->failed_draws, 1);
        return 1; /* the head unit keeps the last picture; an error event says why */
    }
    atomic_store(&engine->width, frame->width);
    atomic_store(&engine->height, frame->height);
    glClearColor(20 / 255.0f, 24 / 255.0f, 40 / 255.0f, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    glUseProgram(engine->program);
    glBindVertexArray(engine->vertex_array);

    /* The arrow, a third of the height tall, in the middle. */
    float aspect = (float)frame->height / (float)frame->width;
    glUniform4f(engine->colour, 1.0f, 0.55f, 0.1f, 1);
    glUniform2f(engine->scale, 0.6f * aspect, 0.6f);
    glUniform2f(engine->offset, 0, 0.1f);
    glDrawArrays(GL_TRIANGLES, 0, 9);

    /* The progress bar along the top. */
    float progress = (float)atomic_load(&engine->progress_percent) / 100;
    draw_rectangle(engine, frame, 0, 0, frame->width * progress, frame->height * 0.04f, 0.3f, 0.6f, 1.0f);

    carwindow_haptic_region rect = button(frame->width, frame->height);
    int pressed = atomic_load(&engine->button_pressed);
    draw_rectangle(engine, frame, (float)rect.x, (float)rect.y, (float)rect.width, (float)rect.height,
                   pressed ? 0.2f : 0.5f, pressed ? 0.75f : 0.5f, pressed ? 0.3f : 0.5f);
    atomic_fetch_add(&engine->draws, 1);
    return 0;
}

static void on_event(const carwindow_event *event, void *user_data) {
    struct engine *engine = user_data;
    printf("event: %s\n", event->message);
    if (event->type == CARWINDOW_EVENT_REGION_TAPPED && event->region_id == BUTTON_REGION) {
        atomic_store(&engine->tapped, 1);
    } else if (event->type == CARWINDOW_EVENT_STATE_CHANGED) {
        atomic_store(&engine->streaming, event->state_to == CARWINDOW_STATE_STREAMING);
    }
}

static void check(carwindow_status status, const char *call) {
    if (status == CARWINDOW_OK) return;
    fprintf(stderr, "gl-engine: %s failed: %s: %s\n", call, carwindow_status_name(status), carwindow_last_error_message());
    exit(1);
}

static void sleep_ms(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    nanosleep(&pause, NULL);
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
            fprintf(stderr, "gl-engine: the head unit must be HOST:PORT, port 1...65535 (got %s)\n", argv[2]);
            return 64;
        }
        memcpy(sdl_host, argv[2], (size_t)(colon - argv[2]));
    }
    double seconds = argc > 3 ? atof(argv[3]) : 8;
    if (!(seconds >= 3 && seconds <= 600)) {
        fprintf(stderr, "gl-engine: SECONDS must be 3...600\n");
        return 64;
    }
    if (carwindow_api_version() >> 16 != CARWINDOW_API_VERSION_MAJOR ||
        (carwindow_api_version() & 0xffff) < 3) {
        fprintf(stderr, "gl-engine: the loaded library is older than this header's engine content (minor 3)\n");
        return 1;
    }

    static struct engine engine;
    check(carwindow_set_log(NULL, NULL, CARWINDOW_LOG_WARNING), "carwindow_set_log");
    carwindow_context *context = NULL;
    check(carwindow_context_create(NULL, &context), "carwindow_context_create");

    carwindow_session_config config;
    carwindow_session_config_init(&config);
    config.name = "gl-engine";
    config.content = CARWINDOW_CONTENT_GL;
    config.on_draw = on_draw;
    config.draw_user_data = &engine;
    config.width = 640;
    config.height = 384;
    config.encoder = CARWINDOW_ENCODER_OPENH264;
    config.on_event = on_event;
    config.event_user_data = &engine;
    if (sdl_port != 0) {
        config.sdl_host = sdl_host;
        config.sdl_port = (uint16_t)sdl_port;
        config.sdl_app_name = "CarWindow GL engine";
        config.sdl_app_id = "carwindow-gl-engine";
    } else {
        config.annexb_path = argv[1];
    }
    carwindow_session *session = NULL;
    check(carwindow_session_create(context, &config, &session), "carwindow_session_create");
    check(carwindow_session_start(session), "carwindow_session_start");
    for (int waited = 0; !atomic_load(&engine.streaming) && waited < 300; waited++) sleep_ms(100);
    if (!atomic_load(&engine.streaming)) {
        fprintf(stderr, "gl-engine: the head unit did not let the app stream within 30 s\n");
        return 1;
    }
    for (int waited = 0; atomic_load(&engine.draws) == 0 && waited < 100; waited++) sleep_ms(100);

    /* The button as a haptic rectangle, in picture pixels. */
    carwindow_haptic_region rect = button(atomic_load(&engine.width), atomic_load(&engine.height));
    check(carwindow_session_set_haptic_regions(session, &rect, 1), "carwindow_session_set_haptic_regions");

    /* Two seconds of animation: continuous frames while the bar grows. */
    check(carwindow_session_set_continuous(session, 1), "carwindow_session_set_continuous");
    for (int percent = 0; percent <= 100; percent += 5) {
        atomic_store(&engine.progress_percent, percent);
        sleep_ms(100);
    }
    check(carwindow_session_set_continuous(session, 0), "carwindow_session_set_continuous");
    int animated = atomic_load(&engine.draws);

    /* Still: only keep-alives, until the driver taps the button (or this engine does). */
    if (sdl_port == 0) {
        carwindow_touch_point finger = {0, 1000, rect.x + rect.width / 2, rect.y + rect.height / 2};
        carwindow_touch_event touch = {CARWINDOW_TOUCH_BEGIN, &finger, 1};
        check(carwindow_session_touch(session, &touch), "carwindow_session_touch");
        finger.timestamp_ms += 70;
        touch.type = CARWINDOW_TOUCH_END;
        check(carwindow_session_touch(session, &touch), "carwindow_session_touch");
    }
    for (int waited = 0; !atomic_load(&engine.tapped) && waited < (int)(seconds * 10); waited++) sleep_ms(100);
    int still = atomic_load(&engine.draws);
    if (atomic_load(&engine.tapped)) {
        atomic_store(&engine.button_pressed, 1);
        check(carwindow_session_invalidate(session), "carwindow_session_invalidate");
    }
    sleep_ms(1500);

    carwindow_statistics statistics;
    check(carwindow_session_get_statistics(session, &statistics), "carwindow_session_get_statistics");
    check(carwindow_session_stop(session), "carwindow_session_stop");
    check(carwindow_session_close(session), "carwindow_session_close");
    check(carwindow_context_close(context), "carwindow_context_close");
    printf("gl-engine: %d pictures drawn (%d by the animation, %d while still and waiting), %d failed\n",
           atomic_load(&engine.draws), animated, still - animated, atomic_load(&engine.failed_draws));
    printf("gl-engine: %lld frames, %lld refinements, %lld keep-alives, %lld bytes\n",
           (long long)statistics.frames_rendered, (long long)statistics.refinement_frames,
           (long long)statistics.keep_alives, (long long)statistics.bytes_sent);
    if (!atomic_load(&engine.tapped)) {
        fprintf(stderr, "gl-engine: the button was not tapped\n");
        return 1;
    }
    return atomic_load(&engine.failed_draws) == 0 && animated > 5 ? 0 : 1;
}
