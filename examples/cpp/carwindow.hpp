// RAII wrappers over carwindow.h for C++17 engines: handles that close themselves, statuses that
// become exceptions, and std::function callbacks. Header-only; link with
// $(pkg-config --libs carwindow). Copy it into your project and adapt it as you like.
#pragma once

#include <carwindow.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace carwindow {

/// A failed call: the status and the library's message (what was wrong and what to do).
class Error : public std::runtime_error {
public:
    // The library's messages name the function that failed; `call` stands in when there is none.
    Error(carwindow_status status, const std::string &call)
        : std::runtime_error(std::string(carwindow_status_name(status)) + ": "
                             + (*carwindow_last_error_message() ? carwindow_last_error_message() : call)),
          status_(status) {}
    carwindow_status status() const noexcept { return status_; }

private:
    carwindow_status status_;
};

/// Throws an Error unless `status` is CARWINDOW_OK.
inline void check(carwindow_status status, const char *call) {
    if (status != CARWINDOW_OK) throw Error(status, call);
}

/// A render thread with its headless GL context; closed when destroyed.
class Context {
public:
    /// `platform`: nullptr for the first that works, or "gbm", "device", "surfaceless".
    explicit Context(const char *platform = nullptr) { check(carwindow_context_create(platform, &handle_), "carwindow_context_create"); }
    ~Context() { close(); }
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;
    Context(Context &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    Context &operator=(Context &&other) noexcept {
        if (this != &other) {
            close();
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }

    /// EGL platform, GL vendor, renderer and version.
    std::string describe() const {
        char *text = nullptr;
        check(carwindow_context_describe(handle_, &text), "carwindow_context_describe");
        std::unique_ptr<char, decltype(&carwindow_free)> owned(text, &carwindow_free);
        return owned.get();
    }

    carwindow_context *get() const noexcept { return handle_; }

private:
    void close() noexcept {
        // A destructor cannot throw; a context with sessions left open stays (BUSY).
        if (handle_) carwindow_context_close(std::exchange(handle_, nullptr));
    }
    carwindow_context *handle_ = nullptr;
};

/// One head-unit screen. Destroy it before its Context. Its callbacks run on the library's
/// threads (see carwindow.h), so they must be safe to call from there.
class Session {
public:
    using EventHandler = std::function<void(const carwindow_event &)>;
    /// Return false to end this output (see carwindow_access_unit_callback).
    using AccessUnitHandler = std::function<bool(const uint8_t *data, size_t size, int64_t pts_us, bool idr)>;

    /// `config` filled with carwindow_session_config_init; its callbacks are set here.
    Session(const Context &context, carwindow_session_config config, EventHandler on_event = {},
            AccessUnitHandler on_access_unit = {})
        : callbacks_(new Callbacks{std::move(on_event), std::move(on_access_unit)}) {
        if (callbacks_->on_event) {
            config.on_event = &Session::event_trampoline;
            config.event_user_data = callbacks_.get();
        }
        if (callbacks_->on_access_unit) {
            config.on_access_unit = &Session::access_unit_trampoline;
            config.access_unit_user_data = callbacks_.get();
        }
        check(carwindow_session_create(context.get(), &config, &handle_), "carwindow_session_create");
    }
    // After close no callback runs, so the callbacks may go with the session.
    ~Session() {
        if (handle_) carwindow_session_close(handle_);
    }
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    void start() { check(carwindow_session_start(handle_), "carwindow_session_start"); }
    void stop() { check(carwindow_session_stop(handle_), "carwindow_session_stop"); }
    void set_camera(const carwindow_camera &camera, double animation_seconds = 0) {
        check(carwindow_session_set_camera(handle_, &camera, animation_seconds), "carwindow_session_set_camera");
    }
    carwindow_camera camera() const {
        carwindow_camera camera{};
        check(carwindow_session_get_camera(handle_, &camera), "carwindow_session_get_camera");
        return camera;
    }
    void set_vehicle(const carwindow_vehicle &vehicle) {
        check(carwindow_session_set_vehicle(handle_, &vehicle), "carwindow_session_set_vehicle");
    }
    void set_route(const std::vector<carwindow_coordinate> &points) {
        check(carwindow_session_set_route(handle_, points.data(), points.size()), "carwindow_session_set_route");
    }
    void touch_json(const std::string &on_touch_event) {
        check(carwindow_session_touch_json(handle_, on_touch_event.c_str()), "carwindow_session_touch_json");
    }
    void set_haptic_regions(const std::vector<carwindow_haptic_region> &regions) {
        check(carwindow_session_set_haptic_regions(handle_, regions.data(), regions.size()), "carwindow_session_set_haptic_regions");
    }
    std::vector<carwindow_haptic_region> haptic_regions() const {
        carwindow_haptic_region *regions = nullptr;
        size_t count = 0;
        check(carwindow_session_get_haptic_regions(handle_, &regions, &count), "carwindow_session_get_haptic_regions");
        std::unique_ptr<carwindow_haptic_region, decltype(&carwindow_free)> owned(regions, &carwindow_free);
        return std::vector<carwindow_haptic_region>(regions, regions + count);
    }
    void request_idr() { check(carwindow_session_request_idr(handle_), "carwindow_session_request_idr"); }
    carwindow_statistics statistics() const {
        carwindow_statistics statistics{};
        check(carwindow_session_get_statistics(handle_, &statistics), "carwindow_session_get_statistics");
        return statistics;
    }
    carwindow_session *get() const noexcept { return handle_; }

private:
    struct Callbacks {
        EventHandler on_event;
        AccessUnitHandler on_access_unit;
    };
    // Exceptions must not cross into the library: a throwing handler ends the program here.
    static void event_trampoline(const carwindow_event *event, void *user_data) noexcept {
        static_cast<Callbacks *>(user_data)->on_event(*event);
    }
    static int access_unit_trampoline(const uint8_t *data, size_t size, int64_t pts_us, int32_t is_idr, void *user_data) noexcept {
        return static_cast<Callbacks *>(user_data)->on_access_unit(data, size, pts_us, is_idr != 0) ? 0 : 1;
    }

    std::unique_ptr<Callbacks> callbacks_;
    carwindow_session *handle_ = nullptr;
};

}  // namespace carwindow
