import Foundation
import Glibc
import CCarWindow
import CarWindow
import CarWindowSystemSupport

// The functions of carwindow.h; each is documented there, where C and C++ programmers read it.
// Every one checks its arguments, runs through `apiCall` (no Swift error or trap reaches C) and
// returns a status.

/// `carwindow_api_version` (see carwindow.h).
@_cdecl("carwindow_api_version")
public func capiVersion() -> UInt32 {
    UInt32(CARWINDOW_API_VERSION_MAJOR) << 16 | UInt32(CARWINDOW_API_VERSION_MINOR)
}

/// `carwindow_status_name` (see carwindow.h).
@_cdecl("carwindow_status_name")
public func capiStatusName(_ status: Int32) -> UnsafePointer<CChar> {
    UnsafeRawPointer(APIFailure.name(of: status).utf8Start).assumingMemoryBound(to: CChar.self)
}

/// `carwindow_last_error_message` (see carwindow.h).
@_cdecl("carwindow_last_error_message")
public func capiLastErrorMessage() -> UnsafePointer<CChar> {
    CallingThread.lastError
}

/// `carwindow_free` (see carwindow.h).
@_cdecl("carwindow_free")
public func capiFree(_ memory: UnsafeMutableRawPointer?) {
    free(memory)
}

/// `carwindow_context_create` (see carwindow.h).
@_cdecl("carwindow_context_create")
public func capiContextCreate(_ platform: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        guard let out else { throw .invalidArgument("carwindow_context_create: out_context is NULL; pass the address of a carwindow_context *") }
        out.pointee = nil
        let chosen = try platform.map { (name) throws(APIFailure) -> EGLPlatform in
            let name = String(cString: name)
            guard let known = EGLPlatform(rawValue: name) else {
                throw .invalidArgument("carwindow_context_create: platform \"\(name)\" is none of "
                    + EGLPlatform.allCases.map(\.rawValue).joined(separator: ", ") + "; pass NULL to pick the first that works")
            }
            return known
        }
        let context = try waitForThrowing(doing: "carwindow_context_create: no headless OpenGL ES 3 context") {
            try await RenderContext(platform: chosen)
        }
        let token = ContextEntry.table.insert { ContextEntry(token: $0, renderContext: context) }.token
        out.pointee = HandleTable<ContextEntry>.handle(for: token)
    }
}

/// `carwindow_context_describe` (see carwindow.h).
@_cdecl("carwindow_context_describe")
public func capiContextDescribe(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try ContextEntry.table.entry(handle, in: "carwindow_context_describe")
        guard let out else { throw .invalidArgument("carwindow_context_describe: out_text is NULL") }
        out.pointee = strdup(entry.renderContext.info.description)
    }
}

/// `carwindow_context_close` (see carwindow.h).
@_cdecl("carwindow_context_close")
public func capiContextClose(_ handle: OpaquePointer?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try ContextEntry.table.entry(handle, in: "carwindow_context_close")
        try entry.beginClose()
        guard ContextEntry.table.remove(entry.token) else {
            throw APIFailure(CARWINDOW_ERROR_INVALID_HANDLE, "carwindow_context_close: the context was closed by another call")
        }
        let context = entry.renderContext
        waitFor { await context.shutdown() }
        // The render thread ends after shutdown returns; a host that exits next would run the GL
        // driver's exit-time destructors while that thread's thread-local ones still run.
        context.thread.waitUntilEnded()
        // And the encoders of its closed sessions, whose threads would otherwise race it too.
        OpenH264Encoder.waitForReleasedEncoders()
        // And the tile workers of their maps, which finish the layout in hand (holding the
        // style and tiles) after the map is released.
        MapRenderer.waitForEndingTileWorkers()
    }
}

/// `carwindow_set_log` (see carwindow.h).
@_cdecl("carwindow_set_log")
public func capiSetLog(_ callback: carwindow_log_callback?, _ userData: UnsafeMutableRawPointer?, _ minimum: Int32) -> Int32 {
    apiCall { () throws(APIFailure) in
        guard let level = LogForwarding.level(from: minimum) else {
            throw .invalidArgument("carwindow_set_log: minimum \(minimum) is none of CARWINDOW_LOG_DEBUG...CARWINDOW_LOG_OFF")
        }
        LogForwarding.target.withLock { $0 = LogForwarding.Target(callback: callback, userData: userData, minimum: level) }
    }
}

/// `carwindow_context_imports_dmabufs` (see carwindow.h).
@_cdecl("carwindow_context_imports_dmabufs")
public func capiContextImportsDmaBufs(_ handle: OpaquePointer?) -> Int32 {
    guard let entry = try? ContextEntry.table.entry(handle, in: "carwindow_context_imports_dmabufs") else { return 0 }
    return entry.renderContext.importsDmaBufs ? 1 : 0
}
