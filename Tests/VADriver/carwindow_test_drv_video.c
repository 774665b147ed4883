/*
 * carwindow_test_drv_video.so: a VA-API driver for tests that real libva loads
 * (LIBVA_DRIVER_NAME=carwindow_test, LIBVA_DRIVERS_PATH=<folder of this .so>).
 *
 * It offers H.264 encoding the way Intel's iHD driver reports it (Constrained Baseline and Main,
 * EncSlice and EncSliceLP, NV12 surfaces, packed sequence/picture/slice/raw headers, CBR, VBR and
 * CQP) and checks every call an encoder makes against the VA-API rules: handles of the right kind
 * and context, buffer types and sizes, parameter ranges and their agreement with each other,
 * packed header parameter/data pairs, reference lists, picture state (begin/render/end), mapped
 * buffers and derived images, and, at vaTerminate, every object left alive.
 *
 * Behind the checks it writes a real H.264 stream from what the application sent: the packed SPS
 * and PPS as given, and for the slice the packed slice header as given followed by slice data of
 * I_PCM macroblocks holding the surface's samples, so any decoder shows exactly the picture that
 * was uploaded, and decodes the application's own headers. (A PCM sample of 0 is written as 1,
 * so that raw samples never need emulation prevention.)
 *
 * What it reports goes to $CARWINDOW_VA_TEST_LOG (appended) or standard error, one line each:
 *   VIOLATION <rule>: <what the call did>     a call broke a rule; the call fails
 *   PICTURE <n> type=I|P bytes=<n> ...         a picture was coded
 *   RATE bits_per_second=<n> ...               the rate control the application asked for
 *   LEAK <n> <kind>                            at vaTerminate, objects never destroyed
 *   SUMMARY pictures=<n> violations=<n> leaks=<n>
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <va/va.h>
#include <va/va_backend.h>
#include <va/va_enc_h264.h>
#include <va/va_version.h>

#define MAX_OBJECTS 1024
#define MAX_PICTURE_BUFFERS 64
#define MAX_PACKED 16

/* Each kind of handle lives in its own numeric range, so one passed for another is caught. */
enum kind { CONFIG, SURFACE, CONTEXT, BUFFER, IMAGE, KINDS };
static const char *const kind_names[KINDS] = {"configs", "surfaces", "contexts", "buffers", "images"};
static const unsigned kind_base[KINDS] = {0x1000000, 0x2000000, 0x3000000, 0x4000000, 0x5000000};

struct config {
    VAProfile profile;
    VAEntrypoint entrypoint;
    uint32_t rate_control, packed_headers;
};

struct surface {
    int width, height;  /* luma, NV12 with pitch == width */
    uint8_t *data;
    int derived_images; /* images aliasing the data */
    int coded_frames;
};

struct buffer {
    VABufferType type;
    VAContextID context;
    unsigned size, num_elements;
    uint8_t *data;          /* owned unless `alias` */
    int alias;              /* a derived image's buffer: the surface's memory */
    int mapped;
    /* Coded buffers: the segments handed out by vaMapBuffer. */
    VACodedBufferSegment segments[2];
    size_t coded_bytes;
    int coded_ready;
};

struct image {
    VAImage image;
    VASurfaceID derived_from; /* VA_INVALID_ID for vaCreateImage */
};

struct packed {
    uint32_t type, bit_length;
    int has_emulation_bytes;
    uint8_t *data; /* copied at vaRenderPicture */
    size_t bytes;
};

struct context {
    VAConfigID config;
    int width, height;
    VASurfaceID targets[32];
    int num_targets;
    int in_picture;
    VASurfaceID input;
    /* What the picture under way received. */
    int have_sequence, have_picture, have_slice;
    VAEncSequenceParameterBufferH264 sequence; /* the last one: it stays in force */
    int sequence_known;
    VAEncPictureParameterBufferH264 picture;
    VAEncSliceParameterBufferH264 slice;
    struct packed packed[MAX_PACKED];
    int num_packed;
    int awaiting_packed_data; /* a packed header parameter buffer came without its data yet */
    uint32_t pending_type, pending_bits;
    int pending_emulation;
    int slice_header_index; /* packed[] index of the slice header for the slice, or -1 */
    unsigned long pictures;
};

struct driver {
    pthread_mutex_t lock;
    FILE *log;
    int violations;
    unsigned long pictures;
    struct config configs[MAX_OBJECTS];
    struct surface surfaces[MAX_OBJECTS];
    struct context contexts[MAX_OBJECTS];
    struct buffer buffers[MAX_OBJECTS];
    struct image images[MAX_OBJECTS];
    unsigned char used[KINDS][MAX_OBJECTS];
};

#define DRIVER(ctx) ((struct driver *)(ctx)->pDriverData)

static void report(struct driver *driver, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vfprintf(driver->log, format, arguments);
    va_end(arguments);
    fputc('\n', driver->log);
    fflush(driver->log);
}

/* Records a broken rule and returns `status` for the call to fail with. */
static VAStatus violation(struct driver *driver, VAStatus status, const char *rule, const char *format, ...) {
    char detail[512];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(detail, sizeof detail, format, arguments);
    va_end(arguments);
    driver->violations++;
    report(driver, "VIOLATION %s: %s", rule, detail);
    return status;
}

static int allocate(struct driver *driver, enum kind kind) {
    for (int i = 0; i < MAX_OBJECTS; i++) {
        if (!driver->used[kind][i]) {
            driver->used[kind][i] = 1;
            return i;
        }
    }
    return -1;
}

/* The slot of handle `id` of `kind`, or -1 when it is not a live handle of that kind. */
static int slot(struct driver *driver, enum kind kind, unsigned id) {
    if (id < kind_base[kind] || id >= kind_base[kind] + MAX_OBJECTS) return -1;
    int index = (int)(id - kind_base[kind]);
    return driver->used[kind][index] ? index : -1;
}

#define LOOKUP(kind, id, rule, status)                                                                        \
    int index_ = slot(driver, kind, id);                                                                      \
    if (index_ < 0) {                                                                                         \
        pthread_mutex_unlock(&driver->lock);                                                                  \
        return violation(driver, status, rule, "0x%x is not a live handle of the %s kind", (unsigned)(id),    \
                         kind_names[kind]);                                                                   \
    }

/* ------------------------------------------------------------------------------------------ */
/* Capabilities, as Intel's iHD driver reports them for H.264 encoding                         */

static int is_h264_encode_profile(VAProfile profile) {
    return profile == VAProfileH264ConstrainedBaseline || profile == VAProfileH264Main || profile == VAProfileH264High;
}

static VAStatus query_config_profiles(VADriverContextP ctx, VAProfile *profiles, int *count) {
    (void)ctx;
    profiles[0] = VAProfileH264ConstrainedBaseline;
    profiles[1] = VAProfileH264Main;
    profiles[2] = VAProfileH264High;
    *count = 3;
    return VA_STATUS_SUCCESS;
}

static VAStatus query_config_entrypoints(VADriverContextP ctx, VAProfile profile, VAEntrypoint *entrypoints, int *count) {
    (void)ctx;
    if (!is_h264_encode_profile(profile)) {
        *count = 0;
        return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    }
    entrypoints[0] = VAEntrypointEncSlice;
    entrypoints[1] = VAEntrypointEncSliceLP;
    *count = 2;
    return VA_STATUS_SUCCESS;
}

static const uint32_t offered_rate_control = VA_RC_CBR | VA_RC_VBR | VA_RC_CQP;
static const uint32_t offered_packed = VA_ENC_PACKED_HEADER_SEQUENCE | VA_ENC_PACKED_HEADER_PICTURE |
                                       VA_ENC_PACKED_HEADER_SLICE | VA_ENC_PACKED_HEADER_RAW_DATA;

static uint32_t attribute_value(VAConfigAttribType type) {
    switch (type) {
    case VAConfigAttribRTFormat: return VA_RT_FORMAT_YUV420;
    case VAConfigAttribRateControl: return offered_rate_control;
    case VAConfigAttribEncPackedHeaders: return offered_packed;
    case VAConfigAttribEncMaxRefFrames: return 1 | (1 << 16); /* one reference in list 0 and in list 1 */
    case VAConfigAttribEncMaxSlices: return 1;
    case VAConfigAttribEncSliceStructure: return VA_ENC_SLICE_STRUCTURE_ARBITRARY_MACROBLOCKS;
    default: return VA_ATTRIB_NOT_SUPPORTED;
    }
}

static VAStatus get_config_attributes(VADriverContextP ctx, VAProfile profile, VAEntrypoint entrypoint,
                                      VAConfigAttrib *attributes, int count) {
    (void)ctx;
    if (!is_h264_encode_profile(profile)) return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    if (entrypoint != VAEntrypointEncSlice && entrypoint != VAEntrypointEncSliceLP) return VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT;
    for (int i = 0; i < count; i++) attributes[i].value = attribute_value(attributes[i].type);
    return VA_STATUS_SUCCESS;
}

static VAStatus create_config(VADriverContextP ctx, VAProfile profile, VAEntrypoint entrypoint, VAConfigAttrib *attributes,
                              int count, VAConfigID *id) {
    struct driver *driver = DRIVER(ctx);
    if (!is_h264_encode_profile(profile)) return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    if (entrypoint != VAEntrypointEncSlice && entrypoint != VAEntrypointEncSliceLP) return VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT;
    struct config config = {profile, entrypoint, VA_RC_CQP, 0};
    for (int i = 0; i < count; i++) {
        uint32_t value = attributes[i].value;
        switch (attributes[i].type) {
        case VAConfigAttribRTFormat:
            if (value != VA_RT_FORMAT_YUV420)
                return violation(driver, VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT, "config-rt-format",
                                 "vaCreateConfig asked for RT format 0x%x; only YUV420 was offered", value);
            break;
        case VAConfigAttribRateControl:
            if (__builtin_popcount(value) != 1 || !(value & offered_rate_control))
                return violation(driver, VA_STATUS_ERROR_INVALID_VALUE, "config-rate-control",
                                 "vaCreateConfig must choose exactly one offered rate-control mode (got 0x%x, offered 0x%x)",
                                 value, offered_rate_control);
            config.rate_control = value;
            break;
        case VAConfigAttribEncPackedHeaders:
            if (value & ~offered_packed)
                return violation(driver, VA_STATUS_ERROR_INVALID_VALUE, "config-packed-headers",
                                 "vaCreateConfig asked for packed headers 0x%x beyond those offered (0x%x)", value, offered_packed);
            config.packed_headers = value;
            break;
        default:
            if (attribute_value(attributes[i].type) == VA_ATTRIB_NOT_SUPPORTED)
                return violation(driver, VA_STATUS_ERROR_ATTR_NOT_SUPPORTED, "config-attribute",
                                 "vaCreateConfig set attribute %d, which this driver does not support", attributes[i].type);
        }
    }
    pthread_mutex_lock(&driver->lock);
    int index = allocate(driver, CONFIG);
    if (index < 0) {
        pthread_mutex_unlock(&driver->lock);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    driver->configs[index] = config;
    *id = kind_base[CONFIG] + (unsigned)index;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus destroy_config(VADriverContextP ctx, VAConfigID id) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(CONFIG, id, "destroy-config", VA_STATUS_ERROR_INVALID_CONFIG);
    for (int i = 0; i < MAX_OBJECTS; i++) {
        if (driver->used[CONTEXT][i] && driver->contexts[i].config == id) {
            pthread_mutex_unlock(&driver->lock);
            return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "destroy-config-in-use",
                             "vaDestroyConfig(0x%x) while context 0x%x still uses it", id, kind_base[CONTEXT] + (unsigned)i);
        }
    }
    driver->used[CONFIG][index_] = 0;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus query_config_attributes(VADriverContextP ctx, VAConfigID id, VAProfile *profile, VAEntrypoint *entrypoint,
                                        VAConfigAttrib *attributes, int *count) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(CONFIG, id, "query-config", VA_STATUS_ERROR_INVALID_CONFIG);
    struct config *config = &driver->configs[index_];
    *profile = config->profile;
    *entrypoint = config->entrypoint;
    attributes[0] = (VAConfigAttrib){VAConfigAttribRTFormat, VA_RT_FORMAT_YUV420};
    attributes[1] = (VAConfigAttrib){VAConfigAttribRateControl, config->rate_control};
    attributes[2] = (VAConfigAttrib){VAConfigAttribEncPackedHeaders, config->packed_headers};
    *count = 3;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Surfaces and images                                                                        */

static VAStatus create_surfaces2(VADriverContextP ctx, unsigned format, unsigned width, unsigned height, VASurfaceID *ids,
                                 unsigned count, VASurfaceAttrib *attributes, unsigned num_attributes) {
    struct driver *driver = DRIVER(ctx);
    if (format != VA_RT_FORMAT_YUV420)
        return violation(driver, VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT, "surface-format",
                         "vaCreateSurfaces with RT format 0x%x; the config takes YUV420", format);
    if (width == 0 || height == 0 || width > 8192 || height > 8192 || width % 2 || height % 2)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "surface-size",
                         "vaCreateSurfaces %ux%u: each side must be even and 2...8192", width, height);
    for (unsigned i = 0; i < num_attributes; i++) {
        if (attributes[i].type == VASurfaceAttribPixelFormat && attributes[i].value.value.i != VA_FOURCC_NV12)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "surface-fourcc",
                             "vaCreateSurfaces asked for fourcc 0x%x; only NV12 is offered", attributes[i].value.value.i);
    }
    pthread_mutex_lock(&driver->lock);
    for (unsigned i = 0; i < count; i++) {
        int index = allocate(driver, SURFACE);
        uint8_t *data = calloc((size_t)width * height * 3 / 2, 1);
        if (index < 0 || !data) {
            if (index >= 0) driver->used[SURFACE][index] = 0;
            free(data);
            pthread_mutex_unlock(&driver->lock);
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        }
        driver->surfaces[index] = (struct surface){(int)width, (int)height, data, 0, 0};
        ids[i] = kind_base[SURFACE] + (unsigned)index;
    }
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus create_surfaces(VADriverContextP ctx, int width, int height, int format, int count, VASurfaceID *ids) {
    return create_surfaces2(ctx, (unsigned)format, (unsigned)width, (unsigned)height, ids, (unsigned)count, NULL, 0);
}

static VAStatus destroy_surfaces(VADriverContextP ctx, VASurfaceID *ids, int count) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    for (int i = 0; i < count; i++) {
        LOOKUP(SURFACE, ids[i], "destroy-surface", VA_STATUS_ERROR_INVALID_SURFACE);
        struct surface *surface = &driver->surfaces[index_];
        if (surface->derived_images) {
            pthread_mutex_unlock(&driver->lock);
            return violation(driver, VA_STATUS_ERROR_SURFACE_BUSY, "destroy-surface-with-derived-image",
                             "vaDestroySurfaces(0x%x) while %d derived image(s) still use its memory", ids[i], surface->derived_images);
        }
        for (int c = 0; c < MAX_OBJECTS; c++) {
            if (driver->used[CONTEXT][c] && driver->contexts[c].in_picture && driver->contexts[c].input == ids[i]) {
                pthread_mutex_unlock(&driver->lock);
                return violation(driver, VA_STATUS_ERROR_SURFACE_BUSY, "destroy-surface-in-picture",
                                 "vaDestroySurfaces(0x%x) between vaBeginPicture and vaEndPicture on it", ids[i]);
            }
        }
        free(surface->data);
        driver->used[SURFACE][index_] = 0;
    }
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus query_surface_attributes(VADriverContextP ctx, VAConfigID config, VASurfaceAttrib *attributes, unsigned *count) {
    (void)ctx, (void)config;
    if (!attributes) {
        *count = 1;
        return VA_STATUS_SUCCESS;
    }
    if (*count < 1) return VA_STATUS_ERROR_MAX_NUM_EXCEEDED;
    attributes[0].type = VASurfaceAttribPixelFormat;
    attributes[0].flags = VA_SURFACE_ATTRIB_GETTABLE | VA_SURFACE_ATTRIB_SETTABLE;
    attributes[0].value.type = VAGenericValueTypeInteger;
    attributes[0].value.value.i = VA_FOURCC_NV12;
    *count = 1;
    return VA_STATUS_SUCCESS;
}

static VAStatus sync_surface(VADriverContextP ctx, VASurfaceID id) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(SURFACE, id, "sync-surface", VA_STATUS_ERROR_INVALID_SURFACE);
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus query_surface_status(VADriverContextP ctx, VASurfaceID id, VASurfaceStatus *status) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(SURFACE, id, "query-surface-status", VA_STATUS_ERROR_INVALID_SURFACE);
    *status = VASurfaceReady;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAImageFormat nv12_format(void) {
    VAImageFormat format;
    memset(&format, 0, sizeof format);
    format.fourcc = VA_FOURCC_NV12;
    format.byte_order = VA_LSB_FIRST;
    format.bits_per_pixel = 12;
    return format;
}

static VAStatus query_image_formats(VADriverContextP ctx, VAImageFormat *formats, int *count) {
    (void)ctx;
    formats[0] = nv12_format();
    *count = 1;
    return VA_STATUS_SUCCESS;
}

/* An image of `width` x `height` NV12 over `data` (the buffer owns it unless `alias`). */
static VAStatus make_image(struct driver *driver, int width, int height, uint8_t *data, int alias, VASurfaceID derived_from,
                           VAImage *out) {
    int buffer_index = allocate(driver, BUFFER);
    int image_index = buffer_index < 0 ? -1 : allocate(driver, IMAGE);
    if (buffer_index < 0 || image_index < 0) {
        if (buffer_index >= 0) driver->used[BUFFER][buffer_index] = 0;
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    unsigned size = (unsigned)width * (unsigned)height * 3 / 2;
    struct buffer *buffer = &driver->buffers[buffer_index];
    memset(buffer, 0, sizeof *buffer);
    buffer->type = VAImageBufferType;
    buffer->context = VA_INVALID_ID;
    buffer->size = size;
    buffer->num_elements = 1;
    buffer->data = data;
    buffer->alias = alias;
    VAImage image;
    memset(&image, 0, sizeof image);
    image.image_id = kind_base[IMAGE] + (unsigned)image_index;
    image.format = nv12_format();
    image.buf = kind_base[BUFFER] + (unsigned)buffer_index;
    image.width = (uint16_t)width;
    image.height = (uint16_t)height;
    image.data_size = size;
    image.num_planes = 2;
    image.pitches[0] = image.pitches[1] = (unsigned)width;
    image.offsets[0] = 0;
    image.offsets[1] = (unsigned)width * (unsigned)height;
    driver->images[image_index] = (struct image){image, derived_from};
    *out = image;
    return VA_STATUS_SUCCESS;
}

static VAStatus create_image(VADriverContextP ctx, VAImageFormat *format, int width, int height, VAImage *image) {
    struct driver *driver = DRIVER(ctx);
    if (format->fourcc != VA_FOURCC_NV12)
        return violation(driver, VA_STATUS_ERROR_INVALID_IMAGE_FORMAT, "image-format",
                         "vaCreateImage with fourcc 0x%x; vaQueryImageFormats offers NV12 only", format->fourcc);
    if (width <= 0 || height <= 0 || width > 8192 || height > 8192 || width % 2 || height % 2)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "image-size", "vaCreateImage %dx%d", width, height);
    uint8_t *data = calloc((size_t)width * (size_t)height * 3 / 2, 1);
    if (!data) return VA_STATUS_ERROR_ALLOCATION_FAILED;
    pthread_mutex_lock(&driver->lock);
    VAStatus status = make_image(driver, width, height, data, 0, VA_INVALID_ID, image);
    pthread_mutex_unlock(&driver->lock);
    if (status != VA_STATUS_SUCCESS) free(data);
    return status;
}

static VAStatus derive_image(VADriverContextP ctx, VASurfaceID surface_id, VAImage *image) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(SURFACE, surface_id, "derive-image", VA_STATUS_ERROR_INVALID_SURFACE);
    struct surface *surface = &driver->surfaces[index_];
    VAStatus status = make_image(driver, surface->width, surface->height, surface->data, 1, surface_id, image);
    if (status == VA_STATUS_SUCCESS) surface->derived_images++;
    pthread_mutex_unlock(&driver->lock);
    return status;
}

static VAStatus destroy_image(VADriverContextP ctx, VAImageID id) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(IMAGE, id, "destroy-image", VA_STATUS_ERROR_INVALID_IMAGE);
    struct image *image = &driver->images[index_];
    int buffer_index = slot(driver, BUFFER, image->image.buf);
    if (buffer_index >= 0) {
        struct buffer *buffer = &driver->buffers[buffer_index];
        if (buffer->mapped) {
            pthread_mutex_unlock(&driver->lock);
            return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "destroy-image-mapped",
                             "vaDestroyImage(0x%x) while its buffer 0x%x is still mapped", id, image->image.buf);
        }
        if (!buffer->alias) free(buffer->data);
        driver->used[BUFFER][buffer_index] = 0;
    }
    if (image->derived_from != VA_INVALID_ID) {
        int surface_index = slot(driver, SURFACE, image->derived_from);
        if (surface_index >= 0) driver->surfaces[surface_index].derived_images--;
    }
    driver->used[IMAGE][index_] = 0;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus put_image(VADriverContextP ctx, VASurfaceID surface_id, VAImageID image_id, int src_x, int src_y,
                          unsigned src_width, unsigned src_height, int dest_x, int dest_y, unsigned dest_width,
                          unsigned dest_height) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    int surface_index = slot(driver, SURFACE, surface_id), image_index = slot(driver, IMAGE, image_id);
    if (surface_index < 0 || image_index < 0) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, surface_index < 0 ? VA_STATUS_ERROR_INVALID_SURFACE : VA_STATUS_ERROR_INVALID_IMAGE,
                         "put-image-handles", "vaPutImage(surface 0x%x, image 0x%x): not live handles", surface_id, image_id);
    }
    struct surface *surface = &driver->surfaces[surface_index];
    struct image *image = &driver->images[image_index];
    int buffer_index = slot(driver, BUFFER, image->image.buf);
    if (src_x != 0 || src_y != 0 || dest_x != 0 || dest_y != 0 || src_width != dest_width || src_height != dest_height ||
        (int)dest_width > surface->width || (int)dest_height > surface->height || src_width > image->image.width ||
        src_height > image->image.height || buffer_index < 0) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "put-image-region",
                         "vaPutImage %ux%u at (%d,%d) to %ux%u at (%d,%d): this driver copies whole, unscaled regions "
                         "from the origin within both the %dx%d surface and the %dx%d image",
                         src_width, src_height, src_x, src_y, dest_width, dest_height, dest_x, dest_y, surface->width,
                         surface->height, image->image.width, image->image.height);
    }
    struct buffer *buffer = &driver->buffers[buffer_index];
    if (buffer->mapped) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "put-image-mapped",
                         "vaPutImage from image 0x%x while its buffer is mapped (write, unmap, then put)", image_id);
    }
    const uint8_t *source = buffer->data;
    for (unsigned row = 0; row < dest_height; row++)
        memcpy(surface->data + (size_t)row * (size_t)surface->width, source + image->image.offsets[0] + (size_t)row * image->image.pitches[0], dest_width);
    uint8_t *chroma = surface->data + (size_t)surface->width * (size_t)surface->height;
    for (unsigned row = 0; row < dest_height / 2; row++)
        memcpy(chroma + (size_t)row * (size_t)surface->width, source + image->image.offsets[1] + (size_t)row * image->image.pitches[1], dest_width);
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Contexts and buffers                                                                       */

static VAStatus create_context(VADriverContextP ctx, VAConfigID config_id, int width, int height, int flag,
                               VASurfaceID *targets, int num_targets, VAContextID *id) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(CONFIG, config_id, "create-context-config", VA_STATUS_ERROR_INVALID_CONFIG);
    if (flag != VA_PROGRESSIVE || width <= 0 || height <= 0 || width % 16 || height % 16 || num_targets < 0 || num_targets > 32) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "create-context-size",
                         "vaCreateContext %dx%d flag %d with %d targets: sizes must be whole macroblocks, progressive, 0...32 targets",
                         width, height, flag, num_targets);
    }
    for (int i = 0; i < num_targets; i++) {
        int surface_index = slot(driver, SURFACE, targets[i]);
        if (surface_index < 0 || driver->surfaces[surface_index].width != width || driver->surfaces[surface_index].height != height) {
            pthread_mutex_unlock(&driver->lock);
            return violation(driver, VA_STATUS_ERROR_INVALID_SURFACE, "create-context-targets",
                             "render target 0x%x is not a live %dx%d surface", targets[i], width, height);
        }
    }
    int index = allocate(driver, CONTEXT);
    if (index < 0) {
        pthread_mutex_unlock(&driver->lock);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    struct context *context = &driver->contexts[index];
    memset(context, 0, sizeof *context);
    context->config = config_id;
    context->width = width;
    context->height = height;
    context->num_targets = num_targets;
    memcpy(context->targets, targets, sizeof(VASurfaceID) * (size_t)num_targets);
    context->slice_header_index = -1;
    *id = kind_base[CONTEXT] + (unsigned)index;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static void forget_packed(struct context *context) {
    for (int i = 0; i < context->num_packed; i++) free(context->packed[i].data);
    context->num_packed = 0;
    context->awaiting_packed_data = 0;
    context->slice_header_index = -1;
    context->have_sequence = context->have_picture = context->have_slice = 0;
}

static VAStatus destroy_context(VADriverContextP ctx, VAContextID id) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(CONTEXT, id, "destroy-context", VA_STATUS_ERROR_INVALID_CONTEXT);
    struct context *context = &driver->contexts[index_];
    if (context->in_picture) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "destroy-context-in-picture",
                         "vaDestroyContext(0x%x) between vaBeginPicture and vaEndPicture", id);
    }
    forget_packed(context);
    driver->used[CONTEXT][index_] = 0;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

/* The size each parameter buffer type must have, 0 for variable ones. */
static unsigned expected_size(VABufferType type) {
    switch (type) {
    case VAEncSequenceParameterBufferType: return sizeof(VAEncSequenceParameterBufferH264);
    case VAEncPictureParameterBufferType: return sizeof(VAEncPictureParameterBufferH264);
    case VAEncSliceParameterBufferType: return sizeof(VAEncSliceParameterBufferH264);
    case VAEncPackedHeaderParameterBufferType: return sizeof(VAEncPackedHeaderParameterBuffer);
    default: return 0;
    }
}

static VAStatus create_buffer(VADriverContextP ctx, VAContextID context_id, VABufferType type, unsigned size,
                              unsigned num_elements, void *data, VABufferID *id) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(CONTEXT, context_id, "create-buffer-context", VA_STATUS_ERROR_INVALID_CONTEXT);
    switch (type) {
    case VAEncCodedBufferType: case VAEncSequenceParameterBufferType: case VAEncPictureParameterBufferType:
    case VAEncSliceParameterBufferType: case VAEncPackedHeaderParameterBufferType: case VAEncPackedHeaderDataBufferType:
    case VAEncMiscParameterBufferType:
        break;
    default:
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_UNSUPPORTED_BUFFERTYPE, "buffer-type",
                         "vaCreateBuffer of type %d on an H.264 encode context", type);
    }
    unsigned expected = expected_size(type);
    if (num_elements != 1 || size == 0 || size > (64u << 20) || (expected && size != expected) ||
        (type == VAEncMiscParameterBufferType && size < sizeof(VAEncMiscParameterBuffer))) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "buffer-size",
                         "vaCreateBuffer of type %d: %u element(s) of %u bytes (expected 1 of %u)", type, num_elements, size,
                         expected ? expected : size);
    }
    if (type != VAEncCodedBufferType && !data) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "buffer-data",
                         "vaCreateBuffer of parameter type %d without data", type);
    }
    int index = allocate(driver, BUFFER);
    uint8_t *copy = calloc(size, 1);
    if (index < 0 || !copy) {
        if (index >= 0) driver->used[BUFFER][index] = 0;
        free(copy);
        pthread_mutex_unlock(&driver->lock);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    if (data) memcpy(copy, data, size);
    struct buffer *buffer = &driver->buffers[index];
    memset(buffer, 0, sizeof *buffer);
    buffer->type = type;
    buffer->context = context_id;
    buffer->size = size;
    buffer->num_elements = num_elements;
    buffer->data = copy;
    *id = kind_base[BUFFER] + (unsigned)index;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus buffer_set_num_elements(VADriverContextP ctx, VABufferID id, unsigned num_elements) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(BUFFER, id, "buffer-set-num-elements", VA_STATUS_ERROR_INVALID_BUFFER);
    pthread_mutex_unlock(&driver->lock);
    if (num_elements != 1)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "buffer-size",
                         "vaBufferSetNumElements(0x%x, %u): encode buffers hold one element", id, num_elements);
    return VA_STATUS_SUCCESS;
}

static VAStatus map_buffer(VADriverContextP ctx, VABufferID id, void **out) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(BUFFER, id, "map-buffer", VA_STATUS_ERROR_INVALID_BUFFER);
    struct buffer *buffer = &driver->buffers[index_];
    if (buffer->mapped) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "map-twice", "vaMapBuffer(0x%x) while already mapped", id);
    }
    if (buffer->type == VAEncCodedBufferType) {
        if (!buffer->coded_ready) {
            pthread_mutex_unlock(&driver->lock);
            return violation(driver, VA_STATUS_ERROR_INVALID_BUFFER, "map-coded-before-picture",
                             "vaMapBuffer of coded buffer 0x%x before any picture was coded into it", id);
        }
        *out = &buffer->segments[0];
    } else {
        *out = buffer->data;
    }
    buffer->mapped = 1;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus unmap_buffer(VADriverContextP ctx, VABufferID id) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(BUFFER, id, "unmap-buffer", VA_STATUS_ERROR_INVALID_BUFFER);
    struct buffer *buffer = &driver->buffers[index_];
    if (!buffer->mapped) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "unmap-unmapped", "vaUnmapBuffer(0x%x) that is not mapped", id);
    }
    buffer->mapped = 0;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus destroy_buffer(VADriverContextP ctx, VABufferID id) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(BUFFER, id, "destroy-buffer", VA_STATUS_ERROR_INVALID_BUFFER);
    struct buffer *buffer = &driver->buffers[index_];
    if (buffer->type == VAImageBufferType) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_INVALID_BUFFER, "destroy-image-buffer",
                         "vaDestroyBuffer(0x%x) of an image's buffer: destroy the image instead", id);
    }
    if (buffer->mapped) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "destroy-mapped-buffer",
                         "vaDestroyBuffer(0x%x) while it is mapped", id);
    }
    free(buffer->data);
    driver->used[BUFFER][index_] = 0;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus sync_buffer(VADriverContextP ctx, VABufferID id, uint64_t timeout) {
    (void)timeout;
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(BUFFER, id, "sync-buffer", VA_STATUS_ERROR_INVALID_BUFFER);
    int coded = driver->buffers[index_].type == VAEncCodedBufferType;
    pthread_mutex_unlock(&driver->lock);
    if (!coded)
        return violation(driver, VA_STATUS_ERROR_UNSUPPORTED_BUFFERTYPE, "sync-buffer-type",
                         "vaSyncBuffer(0x%x) of a buffer that is not a coded buffer", id);
    return VA_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Pictures                                                                                   */

static int is_target(const struct context *context, VASurfaceID id) {
    for (int i = 0; i < context->num_targets; i++)
        if (context->targets[i] == id) return 1;
    return 0;
}

static VAStatus begin_picture(VADriverContextP ctx, VAContextID context_id, VASurfaceID target) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(CONTEXT, context_id, "begin-picture-context", VA_STATUS_ERROR_INVALID_CONTEXT);
    struct context *context = &driver->contexts[index_];
    if (context->in_picture) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "begin-picture-twice",
                         "vaBeginPicture on context 0x%x before vaEndPicture of the last picture", context_id);
    }
    if (slot(driver, SURFACE, target) < 0 || !is_target(context, target)) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_INVALID_SURFACE, "begin-picture-target",
                         "vaBeginPicture with surface 0x%x, which is not a render target of context 0x%x", target, context_id);
    }
    forget_packed(context);
    context->in_picture = 1;
    context->input = target;
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

/* Takes one buffer of the picture; called with the lock held. */
static VAStatus take_buffer(struct driver *driver, struct context *context, VAContextID context_id, VABufferID id) {
    int index = slot(driver, BUFFER, id);
    if (index < 0)
        return violation(driver, VA_STATUS_ERROR_INVALID_BUFFER, "render-buffer-handle", "vaRenderPicture with 0x%x, not a live buffer", id);
    struct buffer *buffer = &driver->buffers[index];
    if (buffer->context != context_id)
        return violation(driver, VA_STATUS_ERROR_INVALID_BUFFER, "render-buffer-context",
                         "buffer 0x%x was made for another context", id);
    if (buffer->mapped)
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "render-mapped-buffer", "buffer 0x%x is still mapped", id);
    if (context->awaiting_packed_data && buffer->type != VAEncPackedHeaderDataBufferType)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-header-pair",
                         "a packed header parameter buffer must be followed at once by its data buffer; got type %d", buffer->type);
    switch (buffer->type) {
    case VAEncSequenceParameterBufferType:
        memcpy(&context->sequence, buffer->data, sizeof context->sequence);
        context->have_sequence = context->sequence_known = 1;
        return VA_STATUS_SUCCESS;
    case VAEncPictureParameterBufferType:
        memcpy(&context->picture, buffer->data, sizeof context->picture);
        context->have_picture = 1;
        return VA_STATUS_SUCCESS;
    case VAEncSliceParameterBufferType:
        if (context->have_slice)
            return violation(driver, VA_STATUS_ERROR_MAX_NUM_EXCEEDED, "slices",
                             "a second slice in one picture; VAConfigAttribEncMaxSlices offered 1");
        memcpy(&context->slice, buffer->data, sizeof context->slice);
        context->have_slice = 1;
        return VA_STATUS_SUCCESS;
    case VAEncPackedHeaderParameterBufferType: {
        const VAEncPackedHeaderParameterBuffer *parameters = (const void *)buffer->data;
        struct config *config = &driver->configs[slot(driver, CONFIG, context->config)];
        uint32_t flag = parameters->type == VAEncPackedHeaderSequence ? VA_ENC_PACKED_HEADER_SEQUENCE
                        : parameters->type == VAEncPackedHeaderPicture ? VA_ENC_PACKED_HEADER_PICTURE
                        : parameters->type == VAEncPackedHeaderSlice   ? VA_ENC_PACKED_HEADER_SLICE
                        : parameters->type == VAEncPackedHeaderRawData ? VA_ENC_PACKED_HEADER_RAW_DATA
                                                                       : 0;
        if (!flag || !(config->packed_headers & flag))
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-header-type",
                             "packed header of type 0x%x, which the config did not ask for (0x%x)", parameters->type, config->packed_headers);
        if (parameters->bit_length == 0)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-header-length", "a packed header of 0 bits");
        if (context->num_packed >= MAX_PACKED)
            return violation(driver, VA_STATUS_ERROR_MAX_NUM_EXCEEDED, "packed-headers", "more than %d packed headers in one picture", MAX_PACKED);
        context->awaiting_packed_data = 1;
        context->pending_type = parameters->type;
        context->pending_bits = parameters->bit_length;
        context->pending_emulation = parameters->has_emulation_bytes != 0;
        return VA_STATUS_SUCCESS;
    }
    case VAEncPackedHeaderDataBufferType: {
        if (!context->awaiting_packed_data)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-header-pair",
                             "a packed header data buffer without its parameter buffer just before it");
        size_t bytes = (context->pending_bits + 7) / 8;
        if (bytes > buffer->size)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-header-length",
                             "bit_length %u needs %zu bytes; the data buffer holds %u", context->pending_bits, bytes, buffer->size);
        struct packed *packed = &context->packed[context->num_packed];
        packed->type = context->pending_type;
        packed->bit_length = context->pending_bits;
        packed->has_emulation_bytes = context->pending_emulation;
        packed->bytes = bytes;
        packed->data = malloc(bytes);
        if (!packed->data) return VA_STATUS_ERROR_ALLOCATION_FAILED;
        memcpy(packed->data, buffer->data, bytes);
        if (packed->type == VAEncPackedHeaderSlice) {
            if (context->have_slice)
                return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-slice-order",
                                 "a packed slice header after its slice parameter buffer; it must come before, as it is "
                                 "matched with the next slice");
            context->slice_header_index = context->num_packed;
        }
        context->num_packed++;
        context->awaiting_packed_data = 0;
        return VA_STATUS_SUCCESS;
    }
    case VAEncMiscParameterBufferType: {
        const VAEncMiscParameterBuffer *misc = (const void *)buffer->data;
        unsigned payload = buffer->size - (unsigned)sizeof(VAEncMiscParameterBuffer);
        if (misc->type == VAEncMiscParameterTypeRateControl) {
            if (payload < sizeof(VAEncMiscParameterRateControl))
                return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "misc-size", "a rate-control buffer of %u bytes", payload);
            const VAEncMiscParameterRateControl *rate = (const void *)misc->data;
            if (rate->bits_per_second == 0 || rate->target_percentage > 100)
                return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "rate-control-values",
                                 "bits_per_second %u, target_percentage %u", rate->bits_per_second, rate->target_percentage);
            report(driver, "RATE bits_per_second=%u target_percentage=%u window_size=%u", rate->bits_per_second,
                   rate->target_percentage, rate->window_size);
        } else if (misc->type == VAEncMiscParameterTypeFrameRate) {
            if (payload < sizeof(VAEncMiscParameterFrameRate))
                return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "misc-size", "a frame-rate buffer of %u bytes", payload);
            const VAEncMiscParameterFrameRate *rate = (const void *)misc->data;
            unsigned numerator = rate->framerate & 0xffff, denominator = rate->framerate >> 16;
            if (numerator == 0)
                return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "frame-rate-values", "frame rate 0x%x has a zero numerator", rate->framerate);
            report(driver, "FRAMERATE %u/%u", numerator, denominator ? denominator : 1);
        } else if (misc->type == VAEncMiscParameterTypeHRD) {
            if (payload < sizeof(VAEncMiscParameterHRD))
                return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "misc-size", "an HRD buffer of %u bytes", payload);
        } else {
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "misc-type", "misc parameter type %d is not offered", misc->type);
        }
        return VA_STATUS_SUCCESS;
    }
    default:
        return violation(driver, VA_STATUS_ERROR_UNSUPPORTED_BUFFERTYPE, "render-buffer-type",
                         "buffer 0x%x of type %d cannot be rendered into an encode picture", id, buffer->type);
    }
}

static VAStatus render_picture(VADriverContextP ctx, VAContextID context_id, VABufferID *buffers, int count) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(CONTEXT, context_id, "render-picture-context", VA_STATUS_ERROR_INVALID_CONTEXT);
    struct context *context = &driver->contexts[index_];
    if (!context->in_picture) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "render-outside-picture",
                         "vaRenderPicture on context 0x%x outside vaBeginPicture/vaEndPicture", context_id);
    }
    if (count <= 0 || count > MAX_PICTURE_BUFFERS || !buffers) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "render-buffer-count", "vaRenderPicture with %d buffers", count);
    }
    for (int i = 0; i < count; i++) {
        VAStatus status = take_buffer(driver, context, context_id, buffers[i]);
        if (status != VA_STATUS_SUCCESS) {
            pthread_mutex_unlock(&driver->lock);
            return status;
        }
    }
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

/* A bit writer for the slice NAL unit (its RBSP before emulation prevention). */
struct bits {
    uint8_t *data;
    size_t capacity, length; /* length in bits */
};

static void put_bit(struct bits *bits, int bit) {
    size_t byte = bits->length / 8;
    if (byte >= bits->capacity) return; /* sized generously below; a full writer drops bits, then the size check fails */
    if (bits->length % 8 == 0) bits->data[byte] = 0;
    if (bit) bits->data[byte] |= (uint8_t)(0x80 >> (bits->length % 8));
    bits->length++;
}

static void put_bits(struct bits *bits, uint32_t value, int count) {
    for (int i = count - 1; i >= 0; i--) put_bit(bits, (value >> i) & 1);
}

static void put_ue(struct bits *bits, uint32_t value) {
    uint32_t code = value + 1;
    int length = 32 - __builtin_clz(code);
    put_bits(bits, 0, length - 1);
    put_bits(bits, code, length);
}

/* Copies `from` bytes of an RBSP to `to` with emulation prevention; returns the bytes written. */
static size_t escape(const uint8_t *from, size_t length, uint8_t *to) {
    size_t written = 0;
    int zeros = 0;
    for (size_t i = 0; i < length; i++) {
        if (zeros == 2 && from[i] <= 3) {
            to[written++] = 3;
            zeros = 0;
        }
        to[written++] = from[i];
        zeros = from[i] == 0 ? zeros + 1 : 0;
    }
    return written;
}

/* Checks the picture's parameters against each other and the rules; called with the lock held. */
static VAStatus check_picture(struct driver *driver, struct context *context, VABufferID *coded_index_out) {
    if (!context->have_picture || !context->have_slice)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "picture-buffers",
                         "vaEndPicture without %s", !context->have_picture ? "a picture parameter buffer" : "a slice parameter buffer");
    if (context->awaiting_packed_data)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-header-pair", "a packed header parameter buffer without its data");
    VAEncPictureParameterBufferH264 *picture = &context->picture;
    VAEncSliceParameterBufferH264 *slice = &context->slice;
    int idr = picture->pic_fields.bits.idr_pic_flag;
    if (idr && !context->have_sequence)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "idr-needs-sequence",
                         "an IDR picture without a sequence parameter buffer in the same picture");
    if (!context->sequence_known)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "sequence-first", "a picture before any sequence parameters");
    VAEncSequenceParameterBufferH264 *sequence = &context->sequence;
    int width_mbs = context->width / 16, height_mbs = context->height / 16;
    if (sequence->picture_width_in_mbs != width_mbs || sequence->picture_height_in_mbs != height_mbs)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "sequence-size",
                         "sequence is %ux%u macroblocks, the context %dx%d", sequence->picture_width_in_mbs,
                         sequence->picture_height_in_mbs, width_mbs, height_mbs);
    if (sequence->seq_fields.bits.chroma_format_idc != 1 || !sequence->seq_fields.bits.frame_mbs_only_flag ||
        sequence->seq_fields.bits.log2_max_frame_num_minus4 > 12 || sequence->seq_fields.bits.pic_order_cnt_type > 2 ||
        sequence->max_num_ref_frames < 1 || sequence->max_num_ref_frames > 16 || sequence->level_idc < 9 || sequence->level_idc > 62)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "sequence-values",
                         "chroma_format_idc %u, frame_mbs_only %u, log2_max_frame_num_minus4 %u, pic_order_cnt_type %u, "
                         "max_num_ref_frames %u, level_idc %u", sequence->seq_fields.bits.chroma_format_idc,
                         sequence->seq_fields.bits.frame_mbs_only_flag, sequence->seq_fields.bits.log2_max_frame_num_minus4,
                         sequence->seq_fields.bits.pic_order_cnt_type, sequence->max_num_ref_frames, sequence->level_idc);
    if (sequence->frame_cropping_flag &&
        (sequence->frame_crop_right_offset * 2 >= 16 || sequence->frame_crop_bottom_offset * 2 >= 16))
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "sequence-cropping",
                         "cropping %u right and %u bottom (in chroma samples) removes a whole macroblock or more",
                         sequence->frame_crop_right_offset, sequence->frame_crop_bottom_offset);
    struct config *config = &driver->configs[slot(driver, CONFIG, context->config)];
    if (config->profile == VAProfileH264ConstrainedBaseline && picture->pic_fields.bits.entropy_coding_mode_flag)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "baseline-cavlc", "CABAC in a Constrained Baseline config");
    uint32_t max_frame_num = 1u << (sequence->seq_fields.bits.log2_max_frame_num_minus4 + 4);
    if (picture->frame_num >= max_frame_num || (idr && picture->frame_num != 0))
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "frame-num",
                         "frame_num %u (max %u; 0 on IDR pictures)", picture->frame_num, max_frame_num);
    if (!is_target(context, picture->CurrPic.picture_id) || picture->CurrPic.picture_id == context->input)
        return violation(driver, VA_STATUS_ERROR_INVALID_SURFACE, "reconstructed-picture",
                         "CurrPic 0x%x must be a render target of the context other than the input surface 0x%x",
                         picture->CurrPic.picture_id, context->input);
    int buffer_index = slot(driver, BUFFER, picture->coded_buf);
    if (buffer_index < 0 || driver->buffers[buffer_index].type != VAEncCodedBufferType)
        return violation(driver, VA_STATUS_ERROR_INVALID_BUFFER, "coded-buffer",
                         "coded_buf 0x%x is not a live coded buffer", picture->coded_buf);
    if (driver->buffers[buffer_index].mapped)
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "coded-buffer-mapped",
                         "coded_buf 0x%x is still mapped from the last picture", picture->coded_buf);
    int total_mbs = width_mbs * height_mbs;
    if (slice->macroblock_address != 0 || (int)slice->num_macroblocks != total_mbs)
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "slice-macroblocks",
                         "the slice covers macroblocks %u..%u; one slice must cover all %d", slice->macroblock_address,
                         slice->macroblock_address + slice->num_macroblocks, total_mbs);
    int slice_is_i = slice->slice_type % 5 == 2, slice_is_p = slice->slice_type % 5 == 0;
    if ((idr && !slice_is_i) || (!slice_is_i && !slice_is_p))
        return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "slice-type",
                         "slice_type %u on a%s picture (I for IDR; I or P otherwise)", slice->slice_type, idr ? "n IDR" : "");
    if (slice_is_p) {
        VAPictureH264 *reference = &slice->RefPicList0[0];
        if (reference->picture_id == VA_INVALID_ID || (reference->flags & VA_PICTURE_H264_INVALID) ||
            !is_target(context, reference->picture_id) || reference->picture_id == picture->CurrPic.picture_id)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "reference-list",
                             "a P slice's RefPicList0[0] (0x%x) must be another render target holding a reference",
                             reference->picture_id);
        int listed = 0;
        for (int i = 0; i < 16; i++)
            if (picture->ReferenceFrames[i].picture_id == reference->picture_id &&
                !(picture->ReferenceFrames[i].flags & VA_PICTURE_H264_INVALID))
                listed = 1;
        if (!listed)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "reference-frames",
                             "RefPicList0[0] 0x%x is not among the picture's ReferenceFrames", reference->picture_id);
        int active = slice->num_ref_idx_active_override_flag ? slice->num_ref_idx_l0_active_minus1
                                                              : picture->num_ref_idx_l0_active_minus1;
        if (active + 1 > (int)sequence->max_num_ref_frames)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "reference-count",
                             "%d active references, more than max_num_ref_frames %u", active + 1, sequence->max_num_ref_frames);
    }
    if (config->packed_headers & VA_ENC_PACKED_HEADER_SLICE) {
        if (context->slice_header_index < 0)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-slice-missing",
                             "the config asked to pack slice headers, but the slice came without one");
    }
    if ((config->packed_headers & VA_ENC_PACKED_HEADER_SEQUENCE) && idr) {
        int sps = -1, pps = -1;
        for (int i = 0; i < context->num_packed; i++) {
            if (context->packed[i].type == VAEncPackedHeaderSequence && sps < 0) sps = i;
            if (context->packed[i].type == VAEncPackedHeaderPicture && pps < 0) pps = i;
        }
        if (sps < 0 || pps < 0 || pps < sps)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-sequence-missing",
                             "an IDR picture of a config that packs sequence headers needs a packed SPS, then a packed PPS");
    }
    for (int i = 0; i < context->num_packed; i++) {
        struct packed *packed = &context->packed[i];
        if (packed->bytes < 5 || packed->data[0] != 0 || packed->data[1] != 0 ||
            !(packed->data[2] == 1 || (packed->data[2] == 0 && packed->data[3] == 1)))
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-start-code",
                             "packed header %d (type 0x%x) does not begin with a start code", i, packed->type);
        if (packed->type != VAEncPackedHeaderSlice && packed->bit_length % 8)
            return violation(driver, VA_STATUS_ERROR_INVALID_PARAMETER, "packed-length",
                             "packed header %d (type 0x%x) of %u bits: only a slice header may end within a byte", i, packed->type,
                             packed->bit_length);
    }
    *coded_index_out = (VABufferID)buffer_index;
    return VA_STATUS_SUCCESS;
}

/* The offset of the NAL header byte after the start code of a packed header. */
static size_t after_start_code(const struct packed *packed) { return packed->data[2] == 1 ? 3 : 4; }

static VAStatus end_picture(VADriverContextP ctx, VAContextID context_id) {
    struct driver *driver = DRIVER(ctx);
    pthread_mutex_lock(&driver->lock);
    LOOKUP(CONTEXT, context_id, "end-picture-context", VA_STATUS_ERROR_INVALID_CONTEXT);
    struct context *context = &driver->contexts[index_];
    if (!context->in_picture) {
        pthread_mutex_unlock(&driver->lock);
        return violation(driver, VA_STATUS_ERROR_OPERATION_FAILED, "end-without-begin",
                         "vaEndPicture on context 0x%x without vaBeginPicture", context_id);
    }
    context->in_picture = 0;
    VABufferID coded_index = 0;
    VAStatus status = check_picture(driver, context, &coded_index);
    if (status != VA_STATUS_SUCCESS) {
        forget_packed(context);
        pthread_mutex_unlock(&driver->lock);
        return status;
    }
    struct buffer *coded = &driver->buffers[coded_index];
    struct surface *surface = &driver->surfaces[slot(driver, SURFACE, context->input)];
    int width_mbs = context->width / 16, height_mbs = context->height / 16;
    int slice_is_p = context->slice.slice_type % 5 == 0;

    /* The slice: the packed header's bits, then one I_PCM macroblock after another. */
    size_t capacity = (size_t)width_mbs * (size_t)height_mbs * 390 + 4096;
    struct bits rbsp = {malloc(capacity), capacity, 0};
    uint8_t *headers = malloc(4096 + 64 * MAX_PACKED);
    uint8_t *slice_nal = malloc(capacity * 3 / 2 + 16);
    if (!rbsp.data || !headers || !slice_nal) {
        free(rbsp.data), free(headers), free(slice_nal);
        forget_packed(context);
        pthread_mutex_unlock(&driver->lock);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    size_t header_bytes = 0;
    for (int i = 0; i < context->num_packed; i++) {
        struct packed *packed = &context->packed[i];
        if (packed->type == VAEncPackedHeaderSlice || header_bytes + packed->bytes * 3 / 2 + 4 > 4096) continue;
        if (packed->has_emulation_bytes) {
            memcpy(headers + header_bytes, packed->data, packed->bytes);
            header_bytes += packed->bytes;
        } else {
            size_t start = after_start_code(packed);
            memcpy(headers + header_bytes, packed->data, start);
            header_bytes += start + escape(packed->data + start, packed->bytes - start, headers + header_bytes + start);
        }
    }
    size_t prefix = 0;
    if (context->slice_header_index >= 0) {
        struct packed *header = &context->packed[context->slice_header_index];
        prefix = after_start_code(header);
        for (uint32_t bit = (uint32_t)prefix * 8; bit < header->bit_length; bit++)
            put_bit(&rbsp, (header->data[bit / 8] >> (7 - bit % 8)) & 1);
    }
    const uint8_t *luma = surface->data, *chroma = surface->data + (size_t)surface->width * (size_t)surface->height;
    for (int my = 0; my < height_mbs; my++) {
        for (int mx = 0; mx < width_mbs; mx++) {
            if (slice_is_p) put_ue(&rbsp, 0); /* mb_skip_run */
            put_ue(&rbsp, slice_is_p ? 30 : 25); /* I_PCM */
            while (rbsp.length % 8) put_bit(&rbsp, 0); /* pcm_alignment_zero_bit */
            for (int y = 0; y < 16; y++)
                for (int x = 0; x < 16; x++) {
                    uint8_t sample = luma[(size_t)(my * 16 + y) * (size_t)surface->width + (size_t)(mx * 16 + x)];
                    put_bits(&rbsp, sample ? sample : 1, 8);
                }
            for (int plane = 0; plane < 2; plane++)
                for (int y = 0; y < 8; y++)
                    for (int x = 0; x < 8; x++) {
                        uint8_t sample = chroma[(size_t)(my * 8 + y) * (size_t)surface->width + (size_t)(mx * 16 + x * 2 + plane)];
                        put_bits(&rbsp, sample ? sample : 1, 8);
                    }
        }
    }
    put_bit(&rbsp, 1); /* rbsp_stop_one_bit */
    while (rbsp.length % 8) put_bit(&rbsp, 0);
    size_t slice_bytes = 0;
    if (context->slice_header_index >= 0) {
        struct packed *header = &context->packed[context->slice_header_index];
        memcpy(slice_nal, header->data, prefix); /* the start code */
        /* The NAL header byte is in the RBSP copy; escaping it is harmless (it is never 0). */
        slice_bytes = prefix + escape(rbsp.data, rbsp.length / 8, slice_nal + prefix);
    }
    int full = rbsp.length / 8 >= rbsp.capacity;
    size_t total = header_bytes + slice_bytes;
    if (full || total > coded->size) {
        coded->segments[0] = (VACodedBufferSegment){0};
        coded->segments[0].status = VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK;
        report(driver, "OVERFLOW picture %lu: %zu bytes for a %u-byte coded buffer", driver->pictures, total, coded->size);
    } else {
        /* Headers and slice as two segments, as drivers do, so readers must follow `next`. */
        memcpy(coded->data, headers, header_bytes);
        memcpy(coded->data + header_bytes, slice_nal, slice_bytes);
        VACodedBufferSegment *first = &coded->segments[0], *second = &coded->segments[1];
        memset(coded->segments, 0, sizeof coded->segments);
        if (header_bytes) {
            first->size = (uint32_t)header_bytes;
            first->buf = coded->data;
            first->next = second;
            second->size = (uint32_t)slice_bytes;
            second->buf = coded->data + header_bytes;
        } else {
            first->size = (uint32_t)slice_bytes;
            first->buf = coded->data;
        }
    }
    coded->coded_ready = 1;
    coded->coded_bytes = total;
    surface->coded_frames++;
    driver->pictures++;
    report(driver, "PICTURE %lu type=%s idr=%d frame_num=%u bytes=%zu packed=%d", driver->pictures, slice_is_p ? "P" : "I",
           context->picture.pic_fields.bits.idr_pic_flag, context->picture.frame_num, total, context->num_packed);
    forget_packed(context);
    free(rbsp.data), free(headers), free(slice_nal);
    pthread_mutex_unlock(&driver->lock);
    return VA_STATUS_SUCCESS;
}

static VAStatus export_surface_handle(VADriverContextP ctx, VASurfaceID id, uint32_t mem_type, uint32_t flags, void *descriptor) {
    (void)ctx, (void)id, (void)mem_type, (void)flags, (void)descriptor;
    /* No DRM device behind this driver, so no dma-buf to give; applications must fall back. */
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry points this driver does not offer (libva requires them to exist)                     */

static VAStatus put_surface(VADriverContextP ctx, VASurfaceID surface, void *draw, short srcx, short srcy, unsigned short srcw,
                            unsigned short srch, short destx, short desty, unsigned short destw, unsigned short desth,
                            VARectangle *cliprects, unsigned int number_cliprects, unsigned int flags) {
    (void)ctx, (void)surface, (void)draw, (void)srcx, (void)srcy, (void)srcw, (void)srch, (void)destx, (void)desty, (void)destw,
        (void)desth, (void)cliprects, (void)number_cliprects, (void)flags;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus set_image_palette(VADriverContextP ctx, VAImageID image, unsigned char *palette) {
    (void)ctx, (void)image, (void)palette;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus get_image(VADriverContextP ctx, VASurfaceID surface, int x, int y, unsigned width, unsigned height, VAImageID image) {
    (void)ctx, (void)surface, (void)x, (void)y, (void)width, (void)height, (void)image;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus query_subpicture_formats(VADriverContextP ctx, VAImageFormat *formats, unsigned *flags, unsigned *count) {
    (void)ctx, (void)formats, (void)flags;
    *count = 0;
    return VA_STATUS_SUCCESS;
}
static VAStatus create_subpicture(VADriverContextP ctx, VAImageID image, VASubpictureID *subpicture) {
    (void)ctx, (void)image, (void)subpicture;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus destroy_subpicture(VADriverContextP ctx, VASubpictureID subpicture) {
    (void)ctx, (void)subpicture;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus set_subpicture_image(VADriverContextP ctx, VASubpictureID subpicture, VAImageID image) {
    (void)ctx, (void)subpicture, (void)image;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus set_subpicture_chromakey(VADriverContextP ctx, VASubpictureID subpicture, unsigned min, unsigned max, unsigned mask) {
    (void)ctx, (void)subpicture, (void)min, (void)max, (void)mask;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus set_subpicture_global_alpha(VADriverContextP ctx, VASubpictureID subpicture, float alpha) {
    (void)ctx, (void)subpicture, (void)alpha;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus associate_subpicture(VADriverContextP ctx, VASubpictureID subpicture, VASurfaceID *targets, int count, short src_x,
                                     short src_y, unsigned short src_width, unsigned short src_height, short dest_x, short dest_y,
                                     unsigned short dest_width, unsigned short dest_height, unsigned int flags) {
    (void)ctx, (void)subpicture, (void)targets, (void)count, (void)src_x, (void)src_y, (void)src_width, (void)src_height,
        (void)dest_x, (void)dest_y, (void)dest_width, (void)dest_height, (void)flags;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus deassociate_subpicture(VADriverContextP ctx, VASubpictureID subpicture, VASurfaceID *targets, int count) {
    (void)ctx, (void)subpicture, (void)targets, (void)count;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus query_display_attributes(VADriverContextP ctx, VADisplayAttribute *attributes, int *count) {
    (void)ctx, (void)attributes;
    *count = 0;
    return VA_STATUS_SUCCESS;
}
static VAStatus get_display_attributes(VADriverContextP ctx, VADisplayAttribute *attributes, int count) {
    (void)ctx, (void)attributes, (void)count;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
static VAStatus set_display_attributes(VADriverContextP ctx, VADisplayAttribute *attributes, int count) {
    (void)ctx, (void)attributes, (void)count;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

/* ------------------------------------------------------------------------------------------ */

static VAStatus terminate(VADriverContextP ctx) {
    struct driver *driver = DRIVER(ctx);
    int leaks = 0;
    for (int kind = 0; kind < KINDS; kind++) {
        int count = 0;
        for (int i = 0; i < MAX_OBJECTS; i++) {
            if (!driver->used[kind][i]) continue;
            count++;
            if (kind == SURFACE) free(driver->surfaces[i].data);
            if (kind == BUFFER && !driver->buffers[i].alias) free(driver->buffers[i].data);
            if (kind == CONTEXT) forget_packed(&driver->contexts[i]);
        }
        if (count) report(driver, "LEAK %d %s", count, kind_names[kind]);
        leaks += count;
    }
    report(driver, "SUMMARY pictures=%lu violations=%d leaks=%d", driver->pictures, driver->violations, leaks);
    if (driver->log != stderr) fclose(driver->log);
    pthread_mutex_destroy(&driver->lock);
    free(driver);
    ctx->pDriverData = NULL;
    return VA_STATUS_SUCCESS;
}

#define CW_INIT_NAME(major, minor) __vaDriverInit_##major##_##minor
#define CW_INIT(major, minor) CW_INIT_NAME(major, minor)

__attribute__((visibility("default"))) VAStatus CW_INIT(VA_MAJOR_VERSION, VA_MINOR_VERSION)(VADriverContextP ctx);
VAStatus CW_INIT(VA_MAJOR_VERSION, VA_MINOR_VERSION)(VADriverContextP ctx) {
    struct driver *driver = calloc(1, sizeof *driver);
    if (!driver) return VA_STATUS_ERROR_ALLOCATION_FAILED;
    pthread_mutex_init(&driver->lock, NULL);
    const char *path = getenv("CARWINDOW_VA_TEST_LOG");
    driver->log = path && *path ? fopen(path, "a") : NULL;
    if (!driver->log) driver->log = stderr;
    ctx->pDriverData = driver;
    ctx->version_major = VA_MAJOR_VERSION;
    ctx->version_minor = VA_MINOR_VERSION;
    ctx->max_profiles = 3;
    ctx->max_entrypoints = 2;
    ctx->max_attributes = 8;
    ctx->max_image_formats = 1;
    ctx->max_subpic_formats = 1;
    ctx->max_display_attributes = 1;
    ctx->str_vendor = "CarWindow VA-API test driver (validating, I_PCM)";

    struct VADriverVTable *vtable = ctx->vtable;
    vtable->vaTerminate = terminate;
    vtable->vaQueryConfigProfiles = query_config_profiles;
    vtable->vaQueryConfigEntrypoints = query_config_entrypoints;
    vtable->vaGetConfigAttributes = get_config_attributes;
    vtable->vaCreateConfig = create_config;
    vtable->vaDestroyConfig = destroy_config;
    vtable->vaQueryConfigAttributes = query_config_attributes;
    vtable->vaCreateSurfaces = create_surfaces;
    vtable->vaCreateSurfaces2 = create_surfaces2;
    vtable->vaQuerySurfaceAttributes = query_surface_attributes;
    vtable->vaDestroySurfaces = destroy_surfaces;
    vtable->vaCreateContext = create_context;
    vtable->vaDestroyContext = destroy_context;
    vtable->vaCreateBuffer = create_buffer;
    vtable->vaBufferSetNumElements = buffer_set_num_elements;
    vtable->vaMapBuffer = map_buffer;
    vtable->vaUnmapBuffer = unmap_buffer;
    vtable->vaDestroyBuffer = destroy_buffer;
    vtable->vaBeginPicture = begin_picture;
    vtable->vaRenderPicture = render_picture;
    vtable->vaEndPicture = end_picture;
    vtable->vaSyncSurface = sync_surface;
    vtable->vaSyncBuffer = sync_buffer;
    vtable->vaQuerySurfaceStatus = query_surface_status;
    vtable->vaPutSurface = put_surface;
    vtable->vaQueryImageFormats = query_image_formats;
    vtable->vaCreateImage = create_image;
    vtable->vaDeriveImage = derive_image;
    vtable->vaDestroyImage = destroy_image;
    vtable->vaSetImagePalette = set_image_palette;
    vtable->vaGetImage = get_image;
    vtable->vaPutImage = put_image;
    vtable->vaQuerySubpictureFormats = query_subpicture_formats;
    vtable->vaCreateSubpicture = create_subpicture;
    vtable->vaDestroySubpicture = destroy_subpicture;
    vtable->vaSetSubpictureImage = set_subpicture_image;
    vtable->vaSetSubpictureChromakey = set_subpicture_chromakey;
    vtable->vaSetSubpictureGlobalAlpha = set_subpicture_global_alpha;
    vtable->vaAssociateSubpicture = associate_subpicture;
    vtable->vaDeassociateSubpicture = deassociate_subpicture;
    vtable->vaQueryDisplayAttributes = query_display_attributes;
    vtable->vaGetDisplayAttributes = get_display_attributes;
    vtable->vaSetDisplayAttributes = set_display_attributes;
    vtable->vaExportSurfaceHandle = export_surface_handle;
    return VA_STATUS_SUCCESS;
}
