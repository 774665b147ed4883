// A C++ engine on CarWindow through the RAII wrappers of carwindow.hpp: it pans the map over
// Helsinki for a few seconds, declares a button of its own, taps it with SmartDeviceLink's
// OnTouchEvent JSON, and keeps the stream in memory before writing it out.
//
//   c++ -std=c++17 drive.cpp $(pkg-config --cflags --libs carwindow) -o drive-cpp
//   ./drive-cpp ASSETS_FOLDER OUT.h264
#include "carwindow.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
    if (argc != 3) {
        std::cerr << "usage: " << argv[0] << " ASSETS_FOLDER OUT.h264\n";
        return 64;
    }
    const std::string assets = argv[1];
    const std::string tiles = assets + "/helsinki.pmtiles", style = assets + "/styles/day.json", fonts = assets + "/fonts";
    try {
        // The library's log into the engine's own (here: standard error with a prefix).
        carwindow::check(carwindow_set_log(
                             [](carwindow_log_level level, const char *line, void *) {
                                 std::fprintf(stderr, "[carwindow %d] %s\n", level, line);
                             },
                             nullptr, CARWINDOW_LOG_WARNING),
                         "carwindow_set_log");
        carwindow::Context context;
        std::cout << "context: " << context.describe() << "\n";

        carwindow_session_config config;
        carwindow_session_config_init(&config);
        config.name = "cpp-drive";
        config.tiles_path = tiles.c_str();
        config.style = style.c_str();
        config.fonts_path = fonts.c_str();
        config.camera = {{60.1699, 24.9415}, 15, 0, 30};
        config.width = 640;
        config.height = 384;
        config.encoder = CARWINDOW_ENCODER_OPENH264;

        std::mutex lock;
        std::vector<uint8_t> stream;
        std::atomic<int> own_button_taps{0};
        const int32_t own_button = 42;
        carwindow::Session session(
            context, config,
            [&](const carwindow_event &event) {
                std::cout << "event: " << event.message << "\n";
                if (event.type == CARWINDOW_EVENT_REGION_TAPPED && event.region_id == own_button) own_button_taps++;
            },
            [&](const uint8_t *data, size_t size, int64_t, bool) {
                std::lock_guard<std::mutex> guard(lock);
                stream.insert(stream.end(), data, data + size);
                return true;
            });
        session.set_haptic_regions({{own_button, 20, 20, 120, 60}});
        session.start();
        session.set_camera({{60.1720, 24.9500}, 16, 90, 45}, 2.5);
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        // A tap on the engine's own button (head-unit pixels; the scale is 1 here).
        session.touch_json(R"({"type":"BEGIN","event":[{"id":0,"ts":[5000],"c":[{"x":80,"y":50}]}]})");
        session.touch_json(R"({"type":"END","event":[{"id":0,"ts":[5080],"c":[{"x":80,"y":50}]}]})");
        std::this_thread::sleep_for(std::chrono::milliseconds(2000));
        const auto regions = session.haptic_regions();
        const auto statistics = session.statistics();
        session.stop();

        std::lock_guard<std::mutex> guard(lock);
        std::ofstream(argv[2], std::ios::binary).write(reinterpret_cast<const char *>(stream.data()),
                                                       static_cast<std::streamsize>(stream.size()));
        std::cout << "regions on screen: " << regions.size() << "; frames drawn: " << statistics.frames_rendered
                  << "; " << stream.size() << " bytes written to " << argv[2] << "\n";
        if (own_button_taps != 1 || stream.empty()) {
            std::cerr << "drive-cpp: expected one tap on region " << own_button << " and a stream (taps: " << own_button_taps
                      << ")\n";
            return 1;
        }
        // Errors are exceptions: a NaN zoom is refused with the library's message.
        try {
            session.set_camera({{60.17, 24.95}, std::nan(""), 0, 0});
        } catch (const carwindow::Error &error) {
            std::cout << "refused as expected: " << error.what() << "\n";
        }
    } catch (const carwindow::Error &error) {
        std::cerr << "drive-cpp: " << error.what() << "\n";
        return 1;
    }
    return 0;
}
