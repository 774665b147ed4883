/*
 * carwindow.h: the C API of CarWindow, for navigation engines written in C and C++.
 *
 * CarWindow draws a map with OpenGL ES on a headless GPU (or Mesa's llvmpipe), encodes it as
 * H.264 and streams it into a car's head unit, drawing only when the map moves. This header is
 * the whole C interface of libcarwindow.so (pkg-config name: carwindow).
 *
 * Conventions, for every function below:
 *  - Every function that can fail returns a carwindow_status: CARWINDOW_OK (0) or an error.
 *    After an error, carwindow_last_error_message() gives the reason and what to do, for the
 *    calling thread. No function aborts the process on bad input: NULL pointers, NaN, values out
 *    of range, calls in the wrong order and calls after close all return an error.
 *  - Every function may be called from any thread, and from several threads at once; calls on
 *    one session are carried out one at a time, in the order they arrive. Each call returns
 *    when its work is done (a camera set is in force, an output is finished), so a call may
 *    block for as long as that takes (start and stop: up to a few hundred milliseconds).
 *    The one exception: no function may be called from inside a carwindow_access_unit_callback
 *    (such calls return CARWINDOW_ERROR_INVALID_STATE).
 *  - Handles (carwindow_context *, carwindow_session *) are opaque tokens that the library never
 *    dereferences: a NULL, closed or made-up handle gives CARWINDOW_ERROR_INVALID_HANDLE.
 *  - Strings are UTF-8 and NUL-terminated. Pointers passed in are read during the call only and
 *    stay the caller's; memory handed out is the caller's to release with carwindow_free().
 *  - Coordinates are WGS 84 degrees; headings and bearings degrees clockwise from north;
 *    distances metres; screen points pixels from the top-left corner.
 *
 * ABI stability: this is version 0.x (see CARWINDOW_API_VERSION_*). Within one major version,
 * functions, constants and the layout of every struct stay as they are; new functions,
 * constants, event types and struct fields may be added (fields only at the end of
 * carwindow_session_config, which carries its own size). A new major version may change
 * anything and changes the library's soname (libcarwindow.so.0 now).
 */
#ifndef CARWINDOW_H
#define CARWINDOW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Versions and errors                                                                        */
/* ------------------------------------------------------------------------------------------ */

/** The major version of this header: a library of another major version is not compatible. */
#define CARWINDOW_API_VERSION_MAJOR 0
/** The minor version: a library of a higher minor version has everything this header names. */
#define CARWINDOW_API_VERSION_MINOR 8

/** What a call did: CARWINDOW_OK or one of the CARWINDOW_ERROR_* values below. */
typedef int32_t carwindow_status;
/** The call did what was asked. */
#define CARWINDOW_OK 0
/** An argument was NULL where it may not be, not finite, or out of its documented range. */
#define CARWINDOW_ERROR_INVALID_ARGUMENT 1
/** The handle is NULL, was closed, or did not come from this library. */
#define CARWINDOW_ERROR_INVALID_HANDLE 2
/** The call does not fit the object's state (stop before start, say). */
#define CARWINDOW_ERROR_INVALID_STATE 3
/** An input file or text (tiles, style, fonts, GeoJSON, JSON) is missing, unreadable or malformed. */
#define CARWINDOW_ERROR_INPUT 4
/** An output (file, RTP socket) could not be opened or written. */
#define CARWINDOW_ERROR_OUTPUT 5
/** No usable EGL/OpenGL ES 3 platform, or drawing failed. */
#define CARWINDOW_ERROR_GRAPHICS 6
/** The H.264 encoder could not be made or failed. */
#define CARWINDOW_ERROR_ENCODER 7
/** The head unit offers no usable size, or the SmartDeviceLink link failed. */
#define CARWINDOW_ERROR_HEAD_UNIT 8
/** The object is still in use (a context with sessions open). */
#define CARWINDOW_ERROR_BUSY 9
/** A fault inside the library; the message says what. Please report it. */
#define CARWINDOW_ERROR_INTERNAL 10

/**
 * The version of the library that is loaded: major << 16 | minor. Compare its major with
 * CARWINDOW_API_VERSION_MAJOR. Thread-safe; never fails.
 */
uint32_t carwindow_api_version(void);

/**
 * A constant name for `status` ("CARWINDOW_ERROR_INPUT"), or "unknown status" for a value that
 * is none of them. The string is static: do not free it. Thread-safe; never fails.
 */
const char *carwindow_status_name(carwindow_status status);

/**
 * The message of the last call on this thread that returned an error: what was wrong and what
 * to do; "" when no call on this thread has failed. The string belongs to the library and stays
 * valid until the next failing call on this thread; do not free it. Never fails.
 */
const char *carwindow_last_error_message(void);

/**
 * Releases memory this library handed out (strings from carwindow_context_describe, arrays from
 * carwindow_session_get_haptic_regions). NULL is allowed and does nothing. Thread-safe.
 */
void carwindow_free(void *memory);

/** How much the library logs. */
typedef int32_t carwindow_log_level;
#define CARWINDOW_LOG_DEBUG 0   /**< Everything, for finding a fault. */
#define CARWINDOW_LOG_INFO 1    /**< State changes and set-up (the default). */
#define CARWINDOW_LOG_WARNING 2 /**< Problems the library went on after. */
#define CARWINDOW_LOG_ERROR 3   /**< Failures only. */
#define CARWINDOW_LOG_OFF 4     /**< Nothing. */

/**
 * Receives one log line (UTF-8, no newline; valid during the call only) at `level`. Called on
 * whichever library thread logs, possibly several at once: it must be thread-safe, return
 * quickly, and call no function of this API (such calls return CARWINDOW_ERROR_INVALID_STATE).
 */
typedef void (*carwindow_log_callback)(carwindow_log_level level, const char *line, void *user_data);

/**
 * Chooses where the library's log lines go: to `callback` with `user_data`, or with callback
 * NULL to standard error (the default, at CARWINDOW_LOG_INFO), from `minimum` up. Takes effect
 * for every line logged after it returns, in every session.
 * Errors: INVALID_ARGUMENT (minimum out of range). Thread-safe.
 */
carwindow_status carwindow_set_log(carwindow_log_callback callback, void *user_data, carwindow_log_level minimum);

/* ------------------------------------------------------------------------------------------ */
/* Plain values                                                                               */
/* ------------------------------------------------------------------------------------------ */

/** A place: latitude -90...90 (the map shows -85.05...85.05), longitude -180...180. */
typedef struct carwindow_coordinate {
    double latitude;  /**< Degrees north. */
    double longitude; /**< Degrees east. */
} carwindow_coordinate;

/** How busy a stretch of the route is (carwindow_congestion.level). Since API 0.7. */
#define CARWINDOW_CONGESTION_UNKNOWN 0
#define CARWINDOW_CONGESTION_LOW 1
#define CARWINDOW_CONGESTION_MODERATE 2
#define CARWINDOW_CONGESTION_HEAVY 3
#define CARWINDOW_CONGESTION_SEVERE 4

/** Traffic on a stretch of the route, by metres from its first point. Since API 0.7. */
typedef struct carwindow_congestion {
    double start_metres; /**< Where the stretch starts. */
    double end_metres;   /**< Where it ends; more than start_metres. */
    int32_t level;       /**< A CARWINDOW_CONGESTION_* value. */
} carwindow_congestion;

/** What the map shows. */
typedef struct carwindow_camera {
    carwindow_coordinate center; /**< The place in the middle of the screen. */
    double zoom;                 /**< 0...22; each step doubles the scale. */
    double bearing;              /**< Degrees clockwise from north that point up; any finite value. */
    double pitch;                /**< Tilt in degrees, 0 (straight down) ... 60. */
} carwindow_camera;

/** The vehicle as the engine's positioning sees it. */
typedef struct carwindow_vehicle {
    carwindow_coordinate position; /**< Where it is. */
    double heading;                /**< Direction of travel, degrees clockwise from north. */
    double speed;                  /**< Metres per second, 0 or more. */
} carwindow_vehicle;

/** A rectangle the head unit's haptic layer can focus and select (SDL's HapticRect). */
typedef struct carwindow_haptic_region {
    int32_t id;    /**< Stable across updates. The engine's: 0...1,999,998,999; the map's own lie above
                        (zoom in 1,999,999,001, zoom out 1,999,999,002, recenter 1,999,999,003). */
    double x;      /**< Left edge in pixels. */
    double y;      /**< Top edge in pixels. */
    double width;  /**< Width in pixels, 0 or more. */
    double height; /**< Height in pixels, 0 or more. */
} carwindow_haptic_region;

/** The phase of a touch event, as SmartDeviceLink's OnTouchEvent names them. */
typedef int32_t carwindow_touch_type;
#define CARWINDOW_TOUCH_BEGIN 0  /**< Fingers went down. */
#define CARWINDOW_TOUCH_MOVE 1   /**< Fingers moved. */
#define CARWINDOW_TOUCH_END 2    /**< Fingers lifted. */
#define CARWINDOW_TOUCH_CANCEL 3 /**< The head unit cancelled the gesture. */

/** One finger in a touch event. */
typedef struct carwindow_touch_point {
    int32_t finger;       /**< 0...9, each at most once per event. */
    int64_t timestamp_ms; /**< Milliseconds on the head unit's clock, 0 or more. */
    double x;             /**< Head-unit pixels from the left (the display size, before scale). */
    double y;             /**< Head-unit pixels from the top. */
} carwindow_touch_point;

/** A touch from the head unit's screen (or a test). */
typedef struct carwindow_touch_event {
    carwindow_touch_type type;           /**< The phase. */
    const carwindow_touch_point *points; /**< The fingers; may be NULL only when count is 0. */
    size_t count;                        /**< 0...10; 0 only for CARWINDOW_TOUCH_CANCEL. */
} carwindow_touch_event;

/** Day or night style. */
typedef int32_t carwindow_appearance;
#define CARWINDOW_APPEARANCE_DAY 0   /**< The day style. */
#define CARWINDOW_APPEARANCE_NIGHT 1 /**< The night style (the day style when there is none). */

/** Whether a head unit link may stream in the clear when protection cannot be had. */
typedef int32_t carwindow_protection;
#define CARWINDOW_PROTECTION_REQUIRED 0  /**< Never stream unprotected: no video rather than video in the clear. */
#define CARWINDOW_PROTECTION_PREFERRED 1 /**< Protect where the head unit can; else stream in the clear, with a warning. */

/** Which H.264 encoder a session uses. */
typedef int32_t carwindow_encoder;
#define CARWINDOW_ENCODER_AUTOMATIC 0 /**< VA-API where a GPU offers it, else OpenH264. */
#define CARWINDOW_ENCODER_OPENH264 1  /**< OpenH264 in software. */
#define CARWINDOW_ENCODER_VAAPI 2     /**< VA-API hardware encoding; fails where none is offered. */

/** Where a session is in its life. */
typedef int32_t carwindow_state;
#define CARWINDOW_STATE_DISCONNECTED 0 /**< No screen yet (before start, after stop). */
#define CARWINDOW_STATE_READY 1        /**< The stream size is chosen; no video yet. */
#define CARWINDOW_STATE_STREAMING 2    /**< Pictures flow. */
#define CARWINDOW_STATE_SUSPENDED 3    /**< The head unit may not show video now. */
#define CARWINDOW_STATE_STOPPING 4     /**< The stream is ending. */

/** The map's own controls. */
typedef int32_t carwindow_control;
#define CARWINDOW_CONTROL_ZOOM_IN 1  /**< The session already zoomed in when the event arrives. */
#define CARWINDOW_CONTROL_ZOOM_OUT 2 /**< The session already zoomed out. */
#define CARWINDOW_CONTROL_RECENTER 3 /**< The engine decides what recentring means. */

/** Camera commands, as a head unit's navigation keys ask them. */
typedef int32_t carwindow_map_command;
#define CARWINDOW_COMMAND_RECENTER 0         /**< Follow the vehicle again. */
#define CARWINDOW_COMMAND_ZOOM_IN 1          /**< One zoom level closer. */
#define CARWINDOW_COMMAND_ZOOM_OUT 2         /**< One zoom level further. */
#define CARWINDOW_COMMAND_PAN_UP 3           /**< Look a quarter screen further up. */
#define CARWINDOW_COMMAND_PAN_DOWN 4         /**< ... down. */
#define CARWINDOW_COMMAND_PAN_LEFT 5         /**< ... left. */
#define CARWINDOW_COMMAND_PAN_RIGHT 6        /**< ... right. */
#define CARWINDOW_COMMAND_TILT_TOGGLE 7      /**< Between the tilted view and a flat one. */
#define CARWINDOW_COMMAND_ROTATE_CLOCKWISE 8 /**< Turn the map 15 degrees clockwise. */
#define CARWINDOW_COMMAND_ROTATE_COUNTERCLOCKWISE 9 /**< ... counter-clockwise. */
#define CARWINDOW_COMMAND_HEADING_TOGGLE 10  /**< Between heading-up and north-up. */

/** Counters since the session first streamed. */
typedef struct carwindow_statistics {
    carwindow_state state;  /**< Where the session is now. */
    uint32_t width;         /**< Encoded width of the current stream; 0 before the first. */
    uint32_t height;        /**< Encoded height; 0 before the first stream. */
    double frames_per_second; /**< The stream's rate; 0 before the first stream. */
    int64_t bitrate;        /**< The stream's target in bit/s; 0 before the first stream. */
    int64_t frames_rendered; /**< New pictures drawn and sent. */
    int64_t refinement_frames; /**< Re-encodes that sharpen a still picture. */
    int64_t keep_alives;    /**< Keep-alive pictures on a still map. */
    int64_t idr_frames;     /**< IDR pictures sent. */
    int64_t bytes_sent;     /**< Bytes handed to the outputs. */
    int64_t output_errors;  /**< Access units an output refused. */
    double streaming_seconds; /**< Time spent streaming (suspended time excluded). */
} carwindow_statistics;

/* ------------------------------------------------------------------------------------------ */
/* Callbacks                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/** What an event is about; the fields of carwindow_event that each type fills are listed. */
typedef int32_t carwindow_event_type;
/** state_from, state_to. */
#define CARWINDOW_EVENT_STATE_CHANGED 1
/** width, height (encoded), display_width, display_height, frames_per_second, bitrate. */
#define CARWINDOW_EVENT_STREAM_STARTED 2
/** width, height, display_width, display_height: the stream restarts at this size. */
#define CARWINDOW_EVENT_RESIZED 3
/** regions, region_count: the full set in head-unit pixels; 0 regions clears them. */
#define CARWINDOW_EVENT_HAPTIC_REGIONS 4
/** control: one of the map's controls was tapped. */
#define CARWINDOW_EVENT_CONTROL_TAPPED 5
/** region_id: a region of the engine's (or a map feature) was tapped or selected. */
#define CARWINDOW_EVENT_REGION_TAPPED 6
/** x, y (rendered pixels); latitude, longitude when has_coordinate: the map was tapped. */
#define CARWINDOW_EVENT_MAP_TAPPED 7
/** camera: the user moved the map; an engine that follows the vehicle may stop doing so. */
#define CARWINDOW_EVENT_CAMERA_MOVED_BY_USER 8
/** region_id, or -1 when nothing has the focus: the app's own focus moved. */
#define CARWINDOW_EVENT_FOCUS_CHANGED 9
/** message: a problem the stream went on after, or input that was ignored. */
#define CARWINDOW_EVENT_WARNING 10
/** message, status: a failure; the state events say whether streaming went on. */
#define CARWINDOW_EVENT_ERROR 11
/** message: the head-unit link's news (registered, HMI level, video allowed, reconnecting). */
#define CARWINDOW_EVENT_HEAD_UNIT 12
/** index: an alternative route (0 or 1, in carwindow_session_set_alternatives order) was tapped. */
#define CARWINDOW_EVENT_ALTERNATIVE_TAPPED 13
/** command: a camera command ran (carwindow_session_perform, or a head unit's key). */
#define CARWINDOW_EVENT_COMMAND_PERFORMED 14
/** dropped: events were dropped because the callback fell more than 4096 events behind. */
#define CARWINDOW_EVENT_EVENTS_DROPPED 15
/**
 * frames_per_second, x (the share of the stream's width and height whose detail pictures keep,
 * 0-1): the stream's bitrate cannot carry its size and rate (or can again), so it sends this many
 * pictures a second with this much detail. The stream's size does not change. (API 0.5)
 */
#define CARWINDOW_EVENT_QUALITY_CHANGED 16

/**
 * One event. Only the fields its type lists are meaningful; the others are 0 or NULL. Every
 * pointer in it is valid during the callback only: copy what you keep.
 */
typedef struct carwindow_event {
    carwindow_event_type type;  /**< What the event is about. */
    const char *message;        /**< A one-line description of every event, for logs; never NULL. */
    carwindow_state state_from; /**< STATE_CHANGED: the state before. */
    carwindow_state state_to;   /**< STATE_CHANGED: the state now. */
    uint32_t width;             /**< STREAM_STARTED, RESIZED: encoded width. */
    uint32_t height;            /**< STREAM_STARTED, RESIZED: encoded height. */
    uint32_t display_width;     /**< STREAM_STARTED, RESIZED: the head unit's width (touch space). */
    uint32_t display_height;    /**< STREAM_STARTED, RESIZED: the head unit's height. */
    double frames_per_second;   /**< STREAM_STARTED: the stream's rate; QUALITY_CHANGED: the rate now. */
    int64_t bitrate;            /**< STREAM_STARTED: the target in bit/s. */
    const carwindow_haptic_region *regions; /**< HAPTIC_REGIONS: the regions. */
    size_t region_count;        /**< HAPTIC_REGIONS: how many. */
    carwindow_control control;  /**< CONTROL_TAPPED: which control. */
    int64_t region_id;          /**< REGION_TAPPED, FOCUS_CHANGED: the region (-1: none). */
    double x;                   /**< MAP_TAPPED: rendered pixels from the left; QUALITY_CHANGED: the detail kept. */
    double y;                   /**< MAP_TAPPED: rendered pixels from the top. */
    int32_t has_coordinate;     /**< MAP_TAPPED: 1 when latitude and longitude are set. */
    double latitude;            /**< MAP_TAPPED: the place tapped. */
    double longitude;           /**< MAP_TAPPED: the place tapped. */
    carwindow_camera camera;    /**< CAMERA_MOVED_BY_USER: the camera now. */
    int64_t index;              /**< ALTERNATIVE_TAPPED: the route's index. */
    carwindow_map_command command; /**< COMMAND_PERFORMED: the command (pans: the nearest). */
    carwindow_status status;    /**< ERROR: the kind of failure. */
    int64_t dropped;            /**< EVENTS_DROPPED: how many. */
} carwindow_event;

/**
 * Receives a session's events, in order, on the session's own event thread (one per session,
 * never a thread of the caller's). From inside it the engine may call any function of this
 * API, carwindow_session_close of this session included (no event follows the callback then).
 * A slow callback delays only later events; more than 4096 waiting events are dropped, oldest
 * first, and reported with CARWINDOW_EVENT_EVENTS_DROPPED.
 */
typedef void (*carwindow_event_callback)(const carwindow_event *event, void *user_data);

/**
 * Receives each encoded picture: Annex-B H.264 (start codes included; SPS and PPS before every
 * IDR), in decoding order, with its presentation time in microseconds from the stream's start
 * and whether it is an IDR. `data` is valid during the call only. Called on the session's
 * encoder thread: return quickly, and call no function of this API from it. Return 0 to go on;
 * any other value ends this output for the stream (reported as an error event) while the
 * session's other outputs go on.
 */
typedef int (*carwindow_access_unit_callback)(const uint8_t *data, size_t size, int64_t pts_us,
                                              int32_t is_idr, void *user_data);

/** What a session's pictures show (carwindow_session_config.content; since minor version 3). */
typedef int32_t carwindow_content;
#define CARWINDOW_CONTENT_MAP 0    /**< CarWindow's map from tiles_path, style and fonts_path (the default). */
#define CARWINDOW_CONTENT_GL 1     /**< The engine's own OpenGL ES drawing, through on_draw. */
#define CARWINDOW_CONTENT_PIXELS 2 /**< Pictures the engine draws with anything (Cairo, Skia) and hands
                                        over with carwindow_session_push_pixels. */

/**
 * The framebuffer on_draw draws one picture into. It is bound when the callback starts, with the
 * viewport set to the whole picture. Draw in GL's own orientation (the first row is the bottom);
 * the library turns the picture upright. It keeps what was drawn last (cleared to opaque black
 * when made and at each resize), so an engine may redraw only what changed.
 */
typedef struct carwindow_gl_frame {
    uint32_t framebuffer;    /**< The GL framebuffer name to draw into. */
    uint32_t width;          /**< The picture's width in pixels: the stream's encoded width. */
    uint32_t height;         /**< ... its height. */
    double scale;            /**< Display pixels per picture pixel: the head unit shows the picture this
                                  many times larger; size text and controls for it. */
    uint64_t picture_number; /**< Counts the pictures drawn, from 1. */
} carwindow_gl_frame;

/**
 * Draws one picture with OpenGL ES 3 (CARWINDOW_CONTENT_GL). Called on the session's render
 * thread with the library's EGL context current and `frame`'s framebuffer bound: when streaming
 * starts or restarts, after carwindow_session_invalidate, and at the stream's frame rate while
 * carwindow_session_set_continuous asks for it. Make the engine's GL objects from inside it (they
 * belong to that context). Leave the context current and call no function of this API from it.
 * Return 0 when the picture is drawn; any other value skips it (the head unit keeps the last
 * picture, and an error event says so). A draw still running after a second is reported with an
 * error event; the stream's last picture is kept alive meanwhile and carwindow_session_stop and
 * _close return without waiting for it, but the render thread is the engine's until it returns.
 */
typedef int (*carwindow_draw_callback)(const carwindow_gl_frame *frame, void *user_data);

/**
 * What a custom layer's draw gets (carwindow_session_add_custom_layer; since minor version 3).
 * Valid during the call only.
 */
typedef struct carwindow_custom_layer_frame {
    uint32_t framebuffer;      /**< The map's framebuffer, bound when the draw starts. */
    uint32_t width;            /**< The picture's width in pixels. */
    uint32_t height;           /**< ... its height. */
    carwindow_camera camera;   /**< The camera the picture is drawn with. */
    float mercator_matrix[16]; /**< Web Mercator (x east and y south, both 0...1 over the world; z up in
                                    the same units) to clip space, column-major, as MapLibre gives it.
                                    Jitters by pixels in floats when zoomed in: see
                                    carwindow_custom_layer_matrix. */
} carwindow_custom_layer_frame;

/**
 * Draws a custom layer of the map with OpenGL ES 3: called on the render thread with the
 * library's context current and the map's framebuffer bound, at the layer's place among the
 * style's layers, premultiplied-alpha blending on. Do not clear the colour (the map below is in
 * it); below a style layer, leave depth and stencil as they are. Call no function of this API
 * from it but carwindow_custom_layer_matrix. Return 0 when drawn; any other value leaves the
 * layer out of this picture (logged once). GL state it changes is put back afterwards.
 */
typedef int (*carwindow_custom_layer_callback)(const carwindow_custom_layer_frame *frame, void *user_data);

/** How a picture's bytes are laid out (carwindow_session_push_pixels). */
typedef int32_t carwindow_pixel_format;
#define CARWINDOW_PIXELS_RGBA 0 /**< Red, green, blue, then alpha or padding. */
#define CARWINDOW_PIXELS_BGRA 1 /**< Blue, green, red, then alpha or padding: Cairo's ARGB32 and RGB24
                                     on a little-endian machine. */
#define CARWINDOW_PIXELS_NV12 2 /**< Since 0.4. Luma rows, then rows of Cb, Cr pairs as long as the
                                     luma's, for half the height rounded up (BT.601 limited range). */
#define CARWINDOW_PIXELS_I420 3 /**< Since 0.4. Luma rows, then the Cb plane and the Cr plane, each of
                                     rows half as long as the luma's (rounded up), for half the height. */

/**
 * A picture in a GPU buffer the engine exported (a Linux dma-buf), for
 * carwindow_session_push_dmabuf (since 0.4).
 */
typedef struct carwindow_dmabuf {
    uint32_t fourcc;      /**< DRM fourcc: AB24, XB24 (bytes R, G, B, A/X), AR24, XR24 (B, G, R, A/X) or NV12. */
    uint32_t width;       /**< The stream's encoded width. */
    uint32_t height;      /**< The stream's encoded height. */
    int32_t plane_count;  /**< 1, or 2 for NV12 (luma, then Cb, Cr pairs). */
    int32_t fds[2];       /**< Each plane's dma-buf descriptor (planes may share one); duplicated. */
    uint32_t offsets[2];  /**< Bytes from the buffer's start to each plane's first row. */
    uint32_t strides[2];  /**< Bytes from one row of each plane to the next. */
    uint64_t modifier;    /**< DRM format modifier as exported; DRM_FORMAT_MOD_INVALID (2^56 - 1) if none. */
    int32_t bottom_first; /**< 1 when the buffer holds the bottom row first (a GL drawing), else 0. */
} carwindow_dmabuf;

/* ------------------------------------------------------------------------------------------ */
/* Context: the render thread and its headless GL context                                     */
/* ------------------------------------------------------------------------------------------ */

/** A render thread with its headless OpenGL ES 3 context; several sessions may share one. */
typedef struct carwindow_context carwindow_context;

/**
 * Opens a headless EGL + OpenGL ES 3 context on a new render thread: a DRM render node through
 * GBM, else an EGL device (NVIDIA), else Mesa's surfaceless llvmpipe.
 * `platform`: NULL for that order, or "gbm", "device" or "surfaceless" to force one.
 * `out_context`: receives the handle (set to NULL on failure); must not be NULL.
 * Errors: INVALID_ARGUMENT (NULL out_context, unknown platform), GRAPHICS (no platform works;
 * the message lists each attempt). Thread-safe.
 */
carwindow_status carwindow_context_create(const char *platform, carwindow_context **out_context);

/**
 * A description of the context: EGL platform, GL vendor, renderer and version, one line.
 * `out_text`: receives a string the caller frees with carwindow_free(); must not be NULL.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT. Thread-safe.
 */
carwindow_status carwindow_context_describe(carwindow_context *context, char **out_text);

/**
 * Destroys the GL context on its render thread and ends the thread; the handle is invalid
 * afterwards. Close the context's sessions first. Returns once the encoders of closed sessions
 * have ended too (up to about a second after their last picture), and the tile workers of their
 * maps (a layout in hand is finished first), so the host may exit.
 * Errors: INVALID_HANDLE, BUSY (sessions still open on it; nothing was closed). Thread-safe.
 */
carwindow_status carwindow_context_close(carwindow_context *context);

/**
 * Whether the context's EGL display imports dma-bufs (EGL_EXT_image_dma_buf_import): 1 when
 * carwindow_session_push_dmabuf converts buffers with no copy, 0 when it must map them (since 0.4).
 * Errors: INVALID_HANDLE (returned as 0). Thread-safe.
 */
int32_t carwindow_context_imports_dmabufs(carwindow_context *context);

/* ------------------------------------------------------------------------------------------ */
/* Session: one head-unit screen                                                              */
/* ------------------------------------------------------------------------------------------ */

/** A map projected into one head-unit screen: camera, vehicle, route, style, outputs. */
typedef struct carwindow_session carwindow_session;

/**
 * How to make a session. Fill it with carwindow_session_config_init() first, then set fields:
 * a later library version that adds fields at the end reads struct_size to know which it got.
 * Every string is read during carwindow_session_create only.
 */
typedef struct carwindow_session_config {
    size_t struct_size;        /**< sizeof(carwindow_session_config); set by _init. */
    const char *name;          /**< For logs; NULL: "map". */
    const char *tiles_path;    /**< A .pmtiles or .mbtiles file or a z/x/y tile folder for the style's
                                    first vector source, its others read as the style says. NULL (since
                                    minor version 8): every vector source as the style names it, a file or
                                    on a server (PMTiles, TileJSON or tile URLs), through the disk cache. */
    const char *style;         /**< Required: a MapLibre style, a path to a .json file or the JSON text. */
    const char *night_style;   /**< Optional night style, path or JSON text; NULL: the day style. */
    const char *fonts_path;    /**< Required: a folder of .ttf/.otf fonts for labels. */
    carwindow_camera camera;   /**< The first view. Default: 0,0 at zoom 2. */
    uint32_t width;            /**< The screen without a head unit: width in pixels, 16...4096. Default 800. */
    uint32_t height;           /**< ... height, 16...4096. Default 480. */
    double scale;              /**< Screen pixels per encoded pixel, 1...10. Default 1. */
    const char *capability_json; /**< Optional: an SDL VideoStreamingCapability object (JSON) for the
                                      screen, instead of width, height and scale. */
    uint32_t min_width;        /**< The smallest screen the app draws for (0: no limit). */
    uint32_t min_height;       /**< ... (0: no limit). */
    uint32_t max_width;        /**< The largest (0: no limit). */
    uint32_t max_height;       /**< ... (0: no limit). */
    double frames_per_second;  /**< The app's rate, 1...60, where lower than the head unit's; 0: the head unit's (15 by default). */
    int64_t bitrate;           /**< The app's bit/s, 10,000...100,000,000, where lower than the head unit's; 0: the head unit's. */
    carwindow_encoder encoder; /**< Default CARWINDOW_ENCODER_AUTOMATIC. */
    carwindow_appearance appearance; /**< Default CARWINDOW_APPEARANCE_DAY. */
    int32_t show_controls;     /**< 1 (default): draw zoom and recenter buttons; 0: none. */
    /* Outputs: any combination; at least one. */
    const char *annexb_path;   /**< An Annex-B .h264 file to write (its folder must exist). */
    const char *mp4_path;      /**< An MP4 file to write, finished (indexed) by stop and close. */
    const char *rtp_host;      /**< RTP/UDP to this host ... */
    uint16_t rtp_port;         /**< ... and port (1...65535). */
    const char *sdp_path;      /**< With RTP: write the SDP that players open here (optional). */
    const char *sdl_host;      /**< A SmartDeviceLink head unit (TCP) at this host ... */
    uint16_t sdl_port;         /**< ... and port: it decides size, rate and when video may flow. */
    const char *sdl_app_name;  /**< With SDL: the app's name on the head unit; NULL: "CarWindow". */
    const char *sdl_app_id;    /**< With SDL: the app id its policy knows; NULL: "carwindow". */
    carwindow_access_unit_callback on_access_unit; /**< Each encoded picture to the engine. */
    void *access_unit_user_data; /**< Passed to on_access_unit. */
    carwindow_event_callback on_event; /**< Events; NULL: none. */
    void *event_user_data;     /**< Passed to on_event. */
    /* Protected video and audio (TLS inside SmartDeviceLink), which production head units require. */
    const char *sdl_certificate_path; /**< With SDL: the app's certificate (PEM; a chain may follow); NULL: streams unprotected. */
    const char *sdl_private_key_path; /**< With a certificate: its private key (PEM, no passphrase). */
    carwindow_protection sdl_protection; /**< With a certificate. Default CARWINDOW_PROTECTION_REQUIRED. */
    /* Since minor version 2. */
    uint32_t encoder_threads;  /**< OpenH264's threads, one slice of each picture apiece, 1...16; 0
                                    (default): from the cores and the stream's size. VA-API ignores it. */
    /* Since minor version 3. */
    carwindow_content content; /**< What the pictures show. Default CARWINDOW_CONTENT_MAP; with GL or
                                    PIXELS, tiles_path, style, night_style, fonts_path, camera,
                                    appearance and show_controls are not used (and may be NULL). */
    carwindow_draw_callback on_draw; /**< With CARWINDOW_CONTENT_GL (required there, NULL otherwise). */
    void *draw_user_data;      /**< Passed to on_draw. */
    /* Since minor version 8. */
    const char *cache_path;    /**< The folder that keeps what came from servers (tiles, the style's
                                    sprites and GeoJSON `data`) between runs, made if missing; NULL:
                                    $XDG_CACHE_HOME/carwindow, else ~/.cache/carwindow. */
} carwindow_session_config;

/**
 * Fills `config` with the defaults and its struct_size; NULL does nothing. Thread-safe.
 */
void carwindow_session_config_init(carwindow_session_config *config);

/**
 * Makes a session on `context`: reads the tiles, styles and fonts (for the map's content) and
 * opens the file and RTP outputs (so a bad path fails here). Nothing is drawn before
 * carwindow_session_start. A style's sprites and GeoJSON `data` on servers are downloaded here
 * (through cache_path; each fetch gives up after 15 s), as are the headers of its tile sources
 * when tiles_path is NULL: call it where blocking is acceptable. A sprite or GeoJSON document
 * that cannot be fetched is a logged warning (the map draws without it); a tile source that
 * cannot be opened is an INPUT error.
 * `out_session`: receives the handle (NULL on failure); must not be NULL.
 * Errors: INVALID_HANDLE (context), INVALID_ARGUMENT (NULL config or out_session, struct_size
 * too small, a value out of range, no output, a certificate without key or SDL, GL content
 * without on_draw or on_draw with other content), INPUT (tiles,
 * style, fonts, capability JSON, or a certificate or key that cannot be read or do not match),
 * OUTPUT (a file cannot be created or is locked by another writer, RTP host unknown).
 * Thread-safe.
 */
carwindow_status carwindow_session_create(carwindow_context *context, const carwindow_session_config *config,
                                          carwindow_session **out_session);

/**
 * Starts streaming. Without a head unit, the screen is the config's and pictures flow when this
 * returns. With sdl_host, it connects in the background: the head unit's capability sets the
 * size and its HMI level starts the video; follow CARWINDOW_EVENT_STATE_CHANGED and HEAD_UNIT.
 * Errors: INVALID_HANDLE, INVALID_STATE (already started), HEAD_UNIT (no usable size), GRAPHICS,
 * ENCODER, OUTPUT. Thread-safe.
 */
carwindow_status carwindow_session_start(carwindow_session *session);

/**
 * Stops streaming and finishes every output (an MP4 gets its index); the head unit link, if
 * any, unregisters. The session stays: start may follow (the Annex-B file is then appended to
 * and the MP4 goes on in NAME.2.mp4). Stopping a session that is not started does nothing.
 * Errors: INVALID_HANDLE. Thread-safe.
 */
carwindow_status carwindow_session_stop(carwindow_session *session);

/**
 * Stops (as carwindow_session_stop), releases the session's GL objects, ends its event thread
 * and invalidates the handle. No event is delivered after it returns (when called from the
 * session's own event callback: after that callback returns).
 * Errors: INVALID_HANDLE. Thread-safe.
 */
carwindow_status carwindow_session_close(carwindow_session *session);

/**
 * Moves the camera, eased over `animation_seconds` (0: at the next picture; longer than 30 s
 * takes 30 s).
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL, a value not finite or out of range,
 * animation_seconds negative or not finite). Thread-safe.
 */
carwindow_status carwindow_session_set_camera(carwindow_session *session, const carwindow_camera *camera,
                                              double animation_seconds);

/**
 * The camera on screen now. `out_camera` must not be NULL.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT. Thread-safe.
 */
carwindow_status carwindow_session_get_camera(carwindow_session *session, carwindow_camera *out_camera);

/**
 * Shows the vehicle; NULL hides it. While following (carwindow_session_follow_vehicle), each
 * call is a position fix (typically one a second) between which the session moves the car and
 * the camera smoothly; otherwise the marker is drawn where given.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (not finite, off the globe, negative speed).
 * Thread-safe.
 */
carwindow_status carwindow_session_set_vehicle(carwindow_session *session, const carwindow_vehicle *vehicle);

/**
 * `follow` 1: the camera follows the vehicle course-up (zoom and tilt by speed) from the next
 * fix; 0: the camera stays where the engine puts it. A user's pan stops following until the
 * recenter control or CARWINDOW_COMMAND_RECENTER.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (not 0 or 1). Thread-safe.
 */
carwindow_status carwindow_session_follow_vehicle(carwindow_session *session, int32_t follow);

/**
 * The edges of the picture the engine's own panels cover (a maneuver card, an ETA bar), in
 * rendered pixels (the stream's size); all 0 by default. The followed vehicle's place, the
 * overview, the zoom and recenter buttons and the credit line keep to the rest. Call it again
 * whenever a panel comes, goes or resizes. However large, the insets leave at least a fifth of
 * each side of the picture to the map. Since API 0.6.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (negative or not finite). Thread-safe.
 */
carwindow_status carwindow_session_set_covered_insets(carwindow_session *session, double top, double left,
                                                      double bottom, double right);

/**
 * Shows the map's labels in `language` where the tiles name places in it (OpenMapTiles'
 * `name:sv`, `name:ja`...), each label falling back to the name the style shows; NULL shows the
 * style's own names again. `language` is a code such as "sv", "SV-SE" (SmartDeviceLink's
 * Language), "en_US" or "zh-TW": two or three letters, then optionally a region or script.
 * The call returns once the new labels are laid out, as carwindow_session_set_appearance does. A session
 * bound to a head unit follows the head unit's display language unless the engine sets one.
 * Since API 0.7.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (not a language code, or longer than 35 bytes).
 * Thread-safe.
 */
carwindow_status carwindow_session_set_label_language(carwindow_session *session, const char *language);

/**
 * Draws the route through `count` points (copied); count 0 clears it. Points not finite or off
 * the globe are dropped with a warning event.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (points NULL with count > 0, count over 1,000,000).
 * Thread-safe.
 */
carwindow_status carwindow_session_set_route(carwindow_session *session, const carwindow_coordinate *points,
                                             size_t count);

/**
 * How far along the route the vehicle is, in metres from its first point: the part behind is
 * drawn as travelled. Errors: INVALID_HANDLE, INVALID_ARGUMENT (negative or not finite).
 * Thread-safe.
 */
carwindow_status carwindow_session_set_route_progress(carwindow_session *session, double metres);

/**
 * The traffic along the route: `count` stretches (at most 10000), each coloured by the style's
 * route layers for its level (the `congestion` property: "moderate", "heavy"...); the rest of the
 * route is "unknown". count 0 clears it, and so does a new route. Stretches with ends that are not
 * finite or not in order are left out with a warning event; overlapping ones go to the one that
 * starts first. Since API 0.7.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL with a count, more than 10000, a level outside
 * CARWINDOW_CONGESTION_*). Thread-safe.
 */
carwindow_status carwindow_session_set_route_congestion(carwindow_session *session,
                                                        const carwindow_congestion *stretches, size_t count);

/**
 * Marks the next manoeuvre at `metres` along the route (an arrow on the route); a negative value
 * clears it. Errors: INVALID_HANDLE, INVALID_ARGUMENT (not finite). Thread-safe.
 */
carwindow_status carwindow_session_set_maneuver(carwindow_session *session, double metres);

/**
 * Switches between the day and night style (CARWINDOW_APPEARANCE_*).
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT. Thread-safe.
 */
carwindow_status carwindow_session_set_appearance(carwindow_session *session, carwindow_appearance appearance);

/**
 * Replaces the styles: `day_style` (required) and `night_style` (NULL: the day style), each a
 * path to a MapLibre style .json or the JSON text itself (text that starts with '{').
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL day_style), INPUT (unreadable or malformed;
 * the map keeps its styles). Thread-safe.
 */
carwindow_status carwindow_session_set_style(carwindow_session *session, const char *day_style,
                                             const char *night_style);

/**
 * Sets the data of the style's GeoJSON source `source_id` to `geojson` (`length` bytes, not
 * necessarily NUL-terminated): the engine's own points, lines and areas, drawn by the style's
 * layers on that source.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL, length over 64 MiB), INPUT (malformed GeoJSON,
 * or the style has no GeoJSON source of that id). Thread-safe.
 */
carwindow_status carwindow_session_set_geojson(carwindow_session *session, const char *source_id,
                                               const char *geojson, size_t length);

/**
 * Draws alternative routes (tappable: CARWINDOW_EVENT_ALTERNATIVE_TAPPED): `route_count` lines,
 * line i having `point_counts[i]` points, all points one after another in `points`.
 * route_count 0 clears them.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL with counts > 0, more than 2 routes or
 * 1,000,000 points in all). Thread-safe.
 */
carwindow_status carwindow_session_set_alternatives(carwindow_session *session, const carwindow_coordinate *points,
                                                    const size_t *point_counts, size_t route_count);

/**
 * Asks for the next picture to be an IDR (a receiver joined, a decoder lost its state).
 * Errors: INVALID_HANDLE. Thread-safe.
 */
carwindow_status carwindow_session_request_idr(carwindow_session *session);

/**
 * Feeds a touch in head-unit pixels: taps on regions and controls, pans, pinches, double taps.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL, a type out of range, points NULL with
 * count > 0, or the event refused: fingers out of 0...9 or twice, not finite, no finger).
 * Thread-safe.
 */
carwindow_status carwindow_session_touch(carwindow_session *session, const carwindow_touch_event *event);

/**
 * Feeds a touch given as the JSON parameters of SmartDeviceLink's OnTouchEvent
 * ({"type":"BEGIN","event":[{"id":0,"ts":[1],"c":[{"x":10,"y":20}]}]}).
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL), INPUT (malformed or refused; the message
 * says why). Thread-safe.
 */
carwindow_status carwindow_session_touch_json(carwindow_session *session, const char *on_touch_event_json);

/**
 * Declares the engine's own controls drawn over the map as haptic regions, in rendered pixels
 * (copied; count 0 clears them); the ids from 1,999,999,000 up are the map's. A tap in one gives
 * CARWINDOW_EVENT_REGION_TAPPED. The full set, controls included and in head-unit pixels, comes
 * back as CARWINDOW_EVENT_HAPTIC_REGIONS.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (regions NULL with count > 0, count over 1000, an id
 * outside 0...1,999,998,999, a rectangle not finite or negative). Thread-safe.
 */
carwindow_status carwindow_session_set_haptic_regions(carwindow_session *session,
                                                      const carwindow_haptic_region *regions, size_t count);

/**
 * The haptic regions of the last picture, in rendered pixels (head-unit pixels divided by the
 * scale), the map's controls included.
 * `out_regions`: receives an array the caller frees with carwindow_free() (NULL when there are
 * none); `out_count`: its length. Neither may be NULL.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT. Thread-safe.
 */
carwindow_status carwindow_session_get_haptic_regions(carwindow_session *session,
                                                      carwindow_haptic_region **out_regions, size_t *out_count);

/**
 * Acts as a tap in the middle of region `id` (a head unit's haptic select).
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (id out of range; an id not on screen is a warning
 * event). Thread-safe.
 */
carwindow_status carwindow_session_select_region(carwindow_session *session, int64_t id);

/**
 * Shows (1) or hides (0) the map's zoom and recenter buttons.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT. Thread-safe.
 */
carwindow_status carwindow_session_set_controls_visible(carwindow_session *session, int32_t visible);

/**
 * Runs a camera command (CARWINDOW_COMMAND_*), as a head unit's navigation key would.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (unknown command). Thread-safe.
 */
carwindow_status carwindow_session_perform(carwindow_session *session, carwindow_map_command command);

/**
 * Says the engine's picture changed (CARWINDOW_CONTENT_GL): the next picture is drawn at the
 * stream's pace, then sharpened and kept alive as after any change. With the map, redraws it.
 * Errors: INVALID_HANDLE. Thread-safe.
 */
carwindow_status carwindow_session_invalidate(carwindow_session *session);

/**
 * Asks for a picture at every frame interval while `continuous` is 1 (the engine animates), or
 * only on changes while it is 0 (the default).
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (not 0 or 1). Thread-safe.
 */
carwindow_status carwindow_session_set_continuous(carwindow_session *session, int32_t continuous);

/**
 * Hands over the engine's next picture (CARWINDOW_CONTENT_PIXELS), copied before this returns:
 * RGBA or BGRA, `height` rows of `width` 4-byte pixels, top row first, each row `bytes_per_row`
 * bytes from the last (at least 4 * width, a multiple of 4), the alpha byte unused (the picture
 * is opaque); or NV12 or I420, luma rows `bytes_per_row` apart (at least `width`) followed by
 * the chroma planes as CARWINDOW_PIXELS_NV12 and _I420 describe. The latest picture wins; it is
 * drawn at the stream's pace. Before the first push, a started stream waits up to half a second,
 * then shows black.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (pixels NULL, a format out of range, a size other than
 * the stream's encoded size of the last STREAM_STARTED event, rows too short or unaligned, `size`
 * shorter than the planes), INVALID_STATE (the session shows other content, or has no stream size
 * yet: start it first). Thread-safe.
 */
carwindow_status carwindow_session_push_pixels(carwindow_session *session, carwindow_pixel_format format,
                                               uint32_t width, uint32_t height, size_t bytes_per_row,
                                               const void *pixels, size_t size);

/**
 * Hands over the engine's next picture as a dma-buf it exported (CARWINDOW_CONTENT_PIXELS; since
 * 0.4). The descriptors are duplicated before this returns: close yours when you like. The buffer
 * is read at the next picture: imported as an EGL image with no copy where the context imports
 * dma-bufs (carwindow_context_imports_dmabufs), else read through a mapping when it is linear
 * (logged once); keep drawing into other buffers (a swap chain) until a later one is handed over.
 * A buffer unreadable at the draw (tiled where nothing imports, shorter than its planes) is an
 * ERROR event; hand over pixels instead then.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (buffer NULL, a fourcc not listed, a plane count that
 * does not fit it, a descriptor that is not open, offsets or strides out of range, a size other
 * than the stream's), INVALID_STATE (the session shows other content, or has no stream size yet).
 * Thread-safe.
 */
carwindow_status carwindow_session_push_dmabuf(carwindow_session *session, const carwindow_dmabuf *buffer);

/**
 * Adds the engine's own GL drawing to the map as layer `id` (replacing a custom layer of that
 * id): below the style layer `below_layer_id`, or above every style layer (under the route,
 * labels, vehicle and controls) when that is NULL. `id` and `below_layer_id` are copied; `draw`
 * and `user_data` are used until the layer is removed or the session closed. The layer stays
 * across day and night, style changes (above the style's layers when a new style lacks
 * `below_layer_id`) and restarts; carwindow_session_invalidate redraws it.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (id NULL, empty or over 256 bytes; draw NULL), INPUT
 * (the style has no layer `below_layer_id`), INVALID_STATE (the session shows the engine's own
 * content, not the map). Thread-safe.
 */
carwindow_status carwindow_session_add_custom_layer(carwindow_session *session, const char *id, const char *below_layer_id,
                                                    carwindow_custom_layer_callback draw, void *user_data);

/**
 * Removes custom layer `id`; an id that is not there is no error.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (id NULL). Thread-safe.
 */
carwindow_status carwindow_session_remove_custom_layer(carwindow_session *session, const char *id);

/**
 * Fills `out_matrix` (16 floats, column-major) with the matrix from metres around `origin` (x east,
 * y north, z up) to clip space for `frame`'s view: exact in floats near the origin at every zoom,
 * for a vehicle model or a lane overlay. The picture's first row is its top, so faces towards the
 * camera wind clockwise in GL's terms: glFrontFace(GL_CW) before culling back faces.
 * Errors: INVALID_ARGUMENT (NULL, a camera or origin not finite or off the globe, a size out of
 * 1...16384). Thread-safe, and callable from inside the layer's draw.
 */
carwindow_status carwindow_custom_layer_matrix(const carwindow_custom_layer_frame *frame, carwindow_coordinate origin,
                                               float out_matrix[16]);

/**
 * Fills `out_statistics` with the session's state and counters; must not be NULL.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT. Thread-safe.
 */
carwindow_status carwindow_session_get_statistics(carwindow_session *session, carwindow_statistics *out_statistics);

#ifdef __cplusplus
}
#endif

#endif /* CARWINDOW_H */
