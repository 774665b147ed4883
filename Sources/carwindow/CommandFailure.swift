import ArgumentParser
import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation
import Glibc
import SystemPackage

/// The exit statuses of the commands (sysexits(3)), so a script can tell failures apart.
enum ExitStatus {
    /// An option is wrong (ArgumentParser's own status for a ValidationError).
    static let usage: Int32 = 64
    /// An input file (tiles, style, route, fonts) is malformed.
    static let dataError: Int32 = 65
    /// An input file is missing or cannot be read.
    static let noInput: Int32 = 66
    /// The head unit or the RTP receiver cannot be reached.
    static let unavailable: Int32 = 69
    /// An output cannot be created: its folder is missing, it is not writable, or another
    /// process is writing it.
    static let cannotCreate: Int32 = 73
    /// An output failed while it was written (a full disk, `ulimit -f`).
    static let ioError: Int32 = 74
    /// Ended by a signal that was handled (files finished, summary printed): 128 + its number,
    /// as a shell reports a process killed by it (SIGHUP 129, SIGINT 130, SIGTERM 143).
    static func signal(_ number: Int32) -> Int32 { 128 + number }
}

/// A failure the command words itself: what failed, with the path, and what to do.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    var exitStatus: Int32
}

/// Runs a command's body and ends the process with the status it returns. A thrown error is
/// printed as one `error:` line on standard error (no usage text: it is no usage mistake) and
/// exits with the status of its kind; ValidationError keeps ArgumentParser's usage message.
func runCommand(_ body: () async throws -> Int32) async throws {
    let status: Int32
    do {
        status = try await body()
    } catch let error as ValidationError {
        throw error
    } catch let error as ExitCode {
        exitWithoutDestructors(error.rawValue)
    } catch {
        let (message, failureStatus) = explain(error)
        Console.error(message)
        exitWithoutDestructors(failureStatus)
    }
    exitWithoutDestructors(status)
}

/// Ends the process once a command's work is done (every output closed, the render context
/// shut down), without running the libraries' exit-time destructors: a thread of the GL driver
/// or the encoder still ending then ran into the same destructors and crashed the process
/// ("double free or corruption") after the command had succeeded. Standard output and error
/// are flushed first.
func exitWithoutDestructors(_ status: Int32) -> Never {
    // Every C stream, standard output and error among them.
    fflush(nil)
    _exit(status)
}

/// The line and exit status for an error from the library or Foundation.
func explain(_ error: any Error) -> (String, Int32) {
    switch error {
    case let failure as CommandFailure:
        return (failure.description, failure.exitStatus)
    case let error as SinkError:
        return (error.description, exitStatus(of: error))
    case let error as ProjectionSessionError:
        if case .sink(let sinkError) = error { return (error.description, exitStatus(of: sinkError)) }
        return (error.description, EXIT_FAILURE)
    case let error as PNGError:
        return (error.description, ExitStatus.cannotCreate)
    case is TileSourceError, is StyleError, is GeoJSONRouteError, is DrivePlanError, is FontError, is TileDecodingError:
        return ("\(error)", ExitStatus.dataError)
    case is SDLConnectionError, is SDLTransportError:
        return ("\(error)", ExitStatus.unavailable)
    case let error as CocoaError:
        return (describe(error), EXIT_FAILURE)
    default:
        let text = String(describing: error)
        // Foundation's own errors print as "Error Domain=..."; say what it means instead.
        if text.hasPrefix("Error Domain=") { return (describe(error as NSError), EXIT_FAILURE) }
        return (text, EXIT_FAILURE)
    }
}

/// The status for a sink's error: cannot create (73), failed while writing (74), unreachable (69).
func exitStatus(of error: SinkError) -> Int32 {
    switch error {
    case .cannotOpenFile, .fileLocked: ExitStatus.cannotCreate
    case .writeFailed, .finishFailed, .allOutputsFailed, .closed: ExitStatus.ioError
    case .unresolvableHost, .socketFailed, .transportFailed: ExitStatus.unavailable
    case .invalidConfiguration, .invalidAccessUnit: EXIT_FAILURE
    }
}

/// "what failed: PATH: ENOENT (No such file or directory)" for an error Foundation threw.
private func describe(_ error: CocoaError) -> String {
    describe(error as NSError)
}

private func describe(_ error: NSError) -> String {
    let path = (error.userInfo[NSFilePathErrorKey] as? String) ?? (error.userInfo[NSURLErrorKey] as? URL)?.path
    var reason = error.localizedFailureReason ?? error.localizedDescription
    if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
        reason = Errno(rawValue: Int32(underlying.code)).nameAndText
    }
    return (path.map { "\($0): " } ?? "") + reason + "; check the path and its permissions"
}

/// An input file the user named, checked before the library reads it, so a mistyped path gets
/// one clear line (and status 66) instead of the reader's wording.
///
/// `folderAllowed` accepts a folder too (a z/x/y tile folder).
func inputFile(_ path: String, option: String, kind: String, folderAllowed: Bool = false) throws -> URL {
    var status = stat()
    guard stat(path, &status) == 0 else {
        let error = Errno(rawValue: errno)
        throw CommandFailure(description: "\(option) \(path): cannot read it: \(error.nameAndText); give the path of \(kind)",
                             exitStatus: ExitStatus.noInput)
    }
    let isFolder = status.st_mode & S_IFMT == S_IFDIR
    if isFolder && !folderAllowed {
        throw CommandFailure(description: "\(option) \(path) is a folder; give the path of \(kind)", exitStatus: ExitStatus.noInput)
    }
    // A device or a FIFO would be read forever or block: only files (and folders where allowed).
    if !isFolder, let what = InputFile.kind(ofMode: status.st_mode) {
        throw CommandFailure(description: "\(option) \(path) is not a regular file but \(what); give the path of \(kind)",
                             exitStatus: ExitStatus.noInput)
    }
    guard access(path, R_OK) == 0 else {
        throw CommandFailure(description: "\(option) \(path): cannot read it: \(Errno(rawValue: errno).nameAndText); give this user read access or copy it elsewhere",
                             exitStatus: ExitStatus.noInput)
    }
    return URL(fileURLWithPath: path, isDirectory: isFolder)
}

/// The folder an output goes into must exist: writing into a folder made up by a typo would
/// lose the recording where nobody looks. `createIfMissing` is for the command's own default
/// folder (out/).
func outputFolder(for url: URL, option: String, createIfMissing: Bool) throws {
    let folder = url.deletingLastPathComponent()
    var isFolder: ObjCBool = false
    if FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder) {
        guard isFolder.boolValue else {
            throw CommandFailure(description: "\(option) \(url.path): \(folder.path) is not a folder; choose another path",
                                 exitStatus: ExitStatus.cannotCreate)
        }
        return
    }
    guard createIfMissing else {
        throw CommandFailure(description: "\(option) \(url.path): the folder \(folder.path) does not exist; create it first (mkdir -p \(folder.path)) or choose another path",
                             exitStatus: ExitStatus.cannotCreate)
    }
    if mkdir(folder.path, 0o755) != 0, errno != EEXIST {
        throw CommandFailure(description: "cannot create the folder \(folder.path) for \(url.path): \(Errno(rawValue: errno).nameAndText); give an output path with --out",
                             exitStatus: ExitStatus.cannotCreate)
    }
}
