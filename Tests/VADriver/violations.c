/*
 * Breaks the VA-API rules on purpose, through real libva, and checks that the test driver
 * refuses each call and names the rule in its log: the proof that its checks can fail.
 * Run by scripts/va-test-driver.sh check, with the environment that script prints.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <va/va.h>
#include <va/va_drm.h>
#include <va/va_enc_h264.h>

static int failures = 0;

/* The call must fail; its rule is looked up in the log at the end. */
static void expect_refused(VAStatus status, const char *what) {
    if (status == VA_STATUS_SUCCESS) {
        fprintf(stderr, "FAIL: %s was accepted\n", what);
        failures++;
    }
}

static void require(VAStatus status, const char *what) {
    if (status != VA_STATUS_SUCCESS) {
        fprintf(stderr, "violations: %s failed: %s\n", what, vaErrorStr(status));
        exit(2);
    }
}

int main(void) {
    const char *log_path = getenv("CARWINDOW_VA_TEST_LOG");
    const char *device = getenv("CARWINDOW_VAAPI_DEVICE");
    if (!log_path || !device) {
        fprintf(stderr, "violations: run with the environment of scripts/va-test-driver.sh and CARWINDOW_VA_TEST_LOG\n");
        return 64;
    }
    int fd = open(device, O_RDWR);
    VADisplay display = fd >= 0 ? vaGetDisplayDRM(fd) : NULL;
    if (!display) {
        fprintf(stderr, "violations: no VA display for %s\n", device);
        return 2;
    }
    int major, minor;
    require(vaInitialize(display, &major, &minor), "vaInitialize");

    VAConfigAttrib attributes[3];
    attributes[0].type = VAConfigAttribRTFormat;
    attributes[0].value = VA_RT_FORMAT_YUV420;
    attributes[1].type = VAConfigAttribRateControl;
    attributes[1].value = VA_RC_CBR;
    attributes[2].type = VAConfigAttribEncPackedHeaders;
    attributes[2].value = VA_ENC_PACKED_HEADER_SEQUENCE | VA_ENC_PACKED_HEADER_PICTURE;
    VAConfigID config;
    require(vaCreateConfig(display, VAProfileH264ConstrainedBaseline, VAEntrypointEncSlice, attributes, 3, &config), "vaCreateConfig");
    /* Two rate-control modes at once. */
    VAConfigAttrib both;
    both.type = VAConfigAttribRateControl;
    both.value = VA_RC_CBR | VA_RC_VBR;
    VAConfigID unused;
    expect_refused(vaCreateConfig(display, VAProfileH264ConstrainedBaseline, VAEntrypointEncSlice, &both, 1, &unused), "two rate controls");

    VASurfaceID surfaces[3];
    require(vaCreateSurfaces(display, VA_RT_FORMAT_YUV420, 64, 64, surfaces, 3, NULL, 0), "vaCreateSurfaces");
    VAContextID context;
    require(vaCreateContext(display, config, 64, 64, VA_PROGRESSIVE, surfaces, 3, &context), "vaCreateContext");
    VABufferID coded;
    require(vaCreateBuffer(display, context, VAEncCodedBufferType, 1 << 16, 1, NULL, &coded), "coded buffer");

    /* A parameter buffer of the wrong size. */
    VAEncSequenceParameterBufferH264 sequence;
    memset(&sequence, 0, sizeof sequence);
    VABufferID wrong;
    expect_refused(vaCreateBuffer(display, context, VAEncSequenceParameterBufferType, sizeof sequence - 4, 1, &sequence, &wrong),
                   "a short sequence buffer");

    /* Rendering and ending outside a picture. */
    VAEncPictureParameterBufferH264 picture;
    memset(&picture, 0, sizeof picture);
    VABufferID picture_buffer;
    require(vaCreateBuffer(display, context, VAEncPictureParameterBufferType, sizeof picture, 1, &picture, &picture_buffer), "picture buffer");
    expect_refused(vaRenderPicture(display, context, &picture_buffer, 1), "vaRenderPicture outside a picture");
    expect_refused(vaEndPicture(display, context), "vaEndPicture without vaBeginPicture");

    /* A packed header parameter buffer followed by something else than its data. */
    VAEncPackedHeaderParameterBuffer packed;
    memset(&packed, 0, sizeof packed);
    packed.type = VAEncPackedHeaderSequence;
    packed.bit_length = 64;
    packed.has_emulation_bytes = 1;
    VABufferID packed_buffer;
    require(vaCreateBuffer(display, context, VAEncPackedHeaderParameterBufferType, sizeof packed, 1, &packed, &packed_buffer), "packed");
    require(vaBeginPicture(display, context, surfaces[0]), "vaBeginPicture");
    VABufferID pair[2] = {packed_buffer, picture_buffer};
    expect_refused(vaRenderPicture(display, context, pair, 2), "a packed header without its data");
    /* An IDR picture without sequence parameters and with a reconstructed picture that is the input. */
    picture.CurrPic.picture_id = surfaces[0];
    picture.coded_buf = coded;
    picture.pic_fields.bits.idr_pic_flag = 1;
    VABufferID idr_picture;
    require(vaCreateBuffer(display, context, VAEncPictureParameterBufferType, sizeof picture, 1, &picture, &idr_picture), "idr picture");
    VAEncSliceParameterBufferH264 slice;
    memset(&slice, 0, sizeof slice);
    slice.num_macroblocks = 16;
    slice.slice_type = 2;
    VABufferID slice_buffer;
    require(vaCreateBuffer(display, context, VAEncSliceParameterBufferType, sizeof slice, 1, &slice, &slice_buffer), "slice");
    VABufferID idr[2] = {idr_picture, slice_buffer};
    /* The earlier refusal left the packed parameters waiting; a new picture starts clean. */
    vaEndPicture(display, context);
    require(vaBeginPicture(display, context, surfaces[0]), "vaBeginPicture 2");
    require(vaRenderPicture(display, context, idr, 2), "render the IDR buffers");
    expect_refused(vaEndPicture(display, context), "an IDR without sequence parameters");

    /* Unmapping what is not mapped; destroying a surface under a derived image. */
    expect_refused(vaUnmapBuffer(display, coded), "unmapping an unmapped buffer");
    VAImage image;
    require(vaDeriveImage(display, surfaces[1], &image), "vaDeriveImage");
    expect_refused(vaDestroySurfaces(display, &surfaces[1], 1), "a surface under a derived image");
    require(vaDestroyImage(display, image.image_id), "vaDestroyImage");

    /* A handle of one kind passed as another. */
    expect_refused(vaDestroyBuffer(display, (VABufferID)surfaces[2]), "a surface id as a buffer");

    /* Left alive on purpose, for vaTerminate to report: the config, three surfaces, the context and
       five buffers (coded, two picture, packed header parameters, slice). */
    vaTerminate(display);
    close(fd);

    static const char *const rules[] = {"config-rate-control", "buffer-size", "render-outside-picture", "end-without-begin",
                                        "packed-header-pair", "idr-needs-sequence", "unmap-unmapped",
                                        "destroy-surface-with-derived-image", "destroy-buffer", "LEAK 1 configs",
                                        "LEAK 3 surfaces", "LEAK 1 contexts", "LEAK 5 buffers"};
    FILE *log = fopen(log_path, "r");
    if (!log) {
        fprintf(stderr, "violations: no driver log at %s\n", log_path);
        return 2;
    }
    static char text[1 << 16];
    size_t length = fread(text, 1, sizeof text - 1, log);
    text[length] = 0;
    fclose(log);
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        char needle[128];
        snprintf(needle, sizeof needle, strncmp(rules[i], "LEAK", 4) == 0 ? "%s" : "VIOLATION %s:", rules[i]);
        if (!strstr(text, needle)) {
            fprintf(stderr, "FAIL: the driver's log does not name %s\n", needle);
            failures++;
        }
    }
    printf("violations: %zu rules broken on purpose, %d not caught\n", sizeof rules / sizeof rules[0], failures);
    return failures == 0 ? 0 : 1;
}
