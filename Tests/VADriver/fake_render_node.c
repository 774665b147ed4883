/*
 * libcarwindow_fake_render_node.so, preloaded in tests only: libva's vaGetDisplayDRM asks libdrm
 * whether its descriptor is a DRM node (drmGetNodeTypeFromFd) before any driver is loaded, and
 * machines without a GPU have none. This answers "render node" for the one file that
 * $CARWINDOW_VAAPI_DEVICE names (the test driver never touches the descriptor) and leaves every
 * other question to the real libdrm.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>

#define DRM_NODE_RENDER 2

__attribute__((visibility("default"))) int drmGetNodeTypeFromFd(int fd);
int drmGetNodeTypeFromFd(int fd) {
    const char *named = getenv("CARWINDOW_VAAPI_DEVICE");
    struct stat device, given;
    if (named && stat(named, &device) == 0 && fstat(fd, &given) == 0 && device.st_dev == given.st_dev &&
        device.st_ino == given.st_ino)
        return DRM_NODE_RENDER;
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "drmGetNodeTypeFromFd");
    return real ? real(fd) : -1;
}
