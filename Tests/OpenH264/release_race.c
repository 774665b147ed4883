/*
 * OpenH264's threaded encoder against being released right after its last picture: threads
 * loop over create (two worker threads, two slices), encode two pictures, wait `grace_ms`,
 * release. Run under valgrind's memcheck (scripts/openh264-release-race.sh): with no wait,
 * OpenH264 2.3.1 unlocks a mutex inside its freed task manager ("Invalid read ... at
 * pthread_mutex_unlock ... free'd by ReleaseMtResource"); with the grace period CarWindow
 * keeps (RetiredOpenH264Encoder), memcheck finds nothing.
 *
 * Usage: release_race THREADS ITERATIONS GRACE_MS
 */
#include <wels/codec_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { width = 640, height = 384 };
static int iterations = 40;
static int grace_ms = 0;

static void *encode_and_release(void *unused) {
    (void)unused;
    unsigned char *planes = malloc(width * height * 3 / 2);
    if (!planes) return NULL;
    memset(planes, 100, width * height * 3 / 2);
    for (int round = 0; round < iterations; round++) {
        ISVCEncoder *encoder = NULL;
        if (WelsCreateSVCEncoder(&encoder) != 0 || !encoder) exit(2);
        SEncParamExt parameters;
        (*encoder)->GetDefaultParams(encoder, &parameters);
        parameters.iUsageType = CAMERA_VIDEO_REAL_TIME;
        parameters.iPicWidth = width;
        parameters.iPicHeight = height;
        parameters.iTargetBitrate = 100000;
        parameters.iMaxBitrate = 800000;
        parameters.iRCMode = RC_TIMESTAMP_MODE;
        parameters.fMaxFrameRate = 15;
        parameters.bEnableFrameSkip = false;
        parameters.iMultipleThreadIdc = 2;
        parameters.iSpatialLayerNum = 1;
        parameters.iTemporalLayerNum = 1;
        parameters.iNumRefFrame = 1;
        parameters.bUseLoadBalancing = false;
        SSpatialLayerConfig *layer = &parameters.sSpatialLayers[0];
        layer->iVideoWidth = width;
        layer->iVideoHeight = height;
        layer->fFrameRate = 15;
        layer->iSpatialBitrate = 100000;
        layer->iMaxSpatialBitrate = 800000;
        layer->sSliceArgument.uiSliceMode = SM_FIXEDSLCNUM_SLICE;
        layer->sSliceArgument.uiSliceNum = 2;
        if ((*encoder)->InitializeExt(encoder, &parameters) != 0) exit(3);
        int format = videoFormatI420;
        (*encoder)->SetOption(encoder, ENCODER_OPTION_DATAFORMAT, &format);
        SSourcePicture picture;
        memset(&picture, 0, sizeof picture);
        picture.iColorFormat = videoFormatI420;
        picture.iPicWidth = width;
        picture.iPicHeight = height;
        picture.iStride[0] = width;
        picture.iStride[1] = picture.iStride[2] = width / 2;
        picture.pData[0] = planes;
        picture.pData[1] = planes + width * height;
        picture.pData[2] = planes + width * height * 5 / 4;
        SFrameBSInfo info;
        for (int index = 0; index < 2; index++) {
            planes[index * 4099] ^= 0xff;
            picture.uiTimeStamp = index * 66;
            (*encoder)->EncodeFrame(encoder, &picture, &info);
        }
        if (grace_ms > 0) usleep(grace_ms * 1000);
        (*encoder)->Uninitialize(encoder);
        WelsDestroySVCEncoder(encoder);
    }
    free(planes);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2) iterations = atoi(argv[2]);
    if (argc > 3) grace_ms = atoi(argv[3]);
    if (threads < 1 || threads > 32 || iterations < 1 || grace_ms < 0) {
        fprintf(stderr, "usage: release_race THREADS(1-32) ITERATIONS GRACE_MS\n");
        return 64;
    }
    pthread_t workers[32];
    for (int index = 0; index < threads; index++) pthread_create(&workers[index], NULL, encode_and_release, NULL);
    for (int index = 0; index < threads; index++) pthread_join(workers[index], NULL);
    return 0;
}
