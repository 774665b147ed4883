import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import CarWindowGeo
import CarWindowSystemSupport

/// One answer of a server, as the cache keeps it.
struct HTTPAnswer: Sendable {
    /// 200, 206, or 404 for a tile the server lacks.
    var status: Int
    var body: Data
    var etag: String?
    var lastModified: String?
    /// `Content-Range`'s total size, for byte-range answers.
    var totalSize: UInt64?
    /// Seconds since 1970 until which the answer may be used without asking the server again.
    var freshUntil: Double
}

/// Fetches URLs for tile sources, blocking the calling thread (the tile store's own workers,
/// never Swift's cooperative pool), through a disk cache that answers fresh entries itself,
/// revalidates stale ones with `If-None-Match` / `If-Modified-Since`, and serves a stale entry
/// when the server cannot be reached (a tunnel, a dead spot).
///
/// Servers are untrusted: a body is cut off at the caller's limit while it downloads, every
/// request has a timeout, and statuses other than 200, 206, 304 and 404 are errors.
///
/// - Important: Thread-safe.
public final class HTTPFetcher: Sendable {
    /// Seconds a request may take before it fails.
    public let timeout: Double
    /// The disk cache; nil fetches every request from the server.
    public let cache: HTTPDiskCache?
    private let session: URLSession
    private let downloads: DownloadDelegate
    private static let logger = Logger(label: "carwindow.http")
    /// Servers that were unreachable, so a stale answer served meanwhile is logged once each.
    private let unreachableHosts = LockedState<Set<String>>([])

    /// Seconds an answer without `Cache-Control: max-age`, `Expires` or `Last-Modified` is used
    /// before the server is asked again.
    static let defaultFreshness = 300.0

    /// A fetcher with `cache` (nil for none) and a timeout per request.
    public init(cache: HTTPDiskCache?, timeout: Double = 15) {
        self.cache = cache
        self.timeout = timeout.isFinite && timeout > 0 ? min(timeout, 300) : 15
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = self.timeout
        configuration.timeoutIntervalForResource = self.timeout * 4
        configuration.urlCache = nil
        configuration.httpAdditionalHeaders = ["User-Agent": "CarWindow"]
        let downloads = DownloadDelegate(timeout: self.timeout)
        self.downloads = downloads
        session = URLSession(configuration: configuration, delegate: downloads, delegateQueue: nil)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// `url` (the bytes in `range` when given), from the cache when fresh, else from the
    /// server. A 404 answer is returned, not thrown: a tile the server lacks.
    ///
    /// - Parameter limit: the most bytes the body may have.
    /// - Throws: `TileSourceError.network` when the server cannot be reached and
    ///   nothing is cached, or answers with an error or too much.
    func get(_ url: URL, range: Range<UInt64>? = nil, limit: Int) throws(TileSourceError) -> HTTPAnswer {
        let key = HTTPDiskCache.key(url: url, range: range)
        let now = Date().timeIntervalSince1970
        let cached = cache?.answer(for: key)
        if let cached, cached.freshUntil > now { return cached }

        var request = URLRequest(url: url)
        if let range { request.setValue("bytes=\(range.lowerBound)-\(range.upperBound - 1)", forHTTPHeaderField: "Range") }
        if let cached {
            if let etag = cached.etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
            if let lastModified = cached.lastModified { request.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since") }
        }
        let response: DownloadDelegate.Response
        do throws(TileSourceError) {
            response = try download(request, limit: limit)
            // A server in trouble is as good as gone: what the cache holds is still drawn.
            if response.status >= 500 || response.status == 429 {
                throw .network(url: url.absoluteString, reason: "the server answered HTTP \(response.status)")
            }
        } catch {
            if let cached {
                // Better an old tile than none while the network is gone.
                if unreachableHosts.withLock({ $0.insert(url.host ?? "").inserted }) {
                    Self.logger.warning("\(error); drawing what the cache holds until it answers again")
                }
                return cached
            }
            throw error
        }
        unreachableHosts.withLock { _ = $0.remove(url.host ?? "") }
        let freshUntil = now + Self.freshness(of: response.headers, now: now)
        let noStore = response.headers["cache-control"]?.lowercased().contains("no-store") == true
        switch response.status {
        case 304:
            guard var revalidated = cached else {
                throw .network(url: url.absoluteString, reason: "the server answered 304 Not Modified to a request without validators")
            }
            revalidated.freshUntil = freshUntil
            if !noStore { cache?.store(revalidated, for: key) }
            return revalidated
        case 200, 206, 404:
            if range != nil && response.status == 200 {
                throw .network(url: url.absoluteString,
                               reason: "the server does not serve byte ranges (it answered 200 to a Range request); an archive needs them")
            }
            var answer = HTTPAnswer(status: response.status, body: response.body, etag: response.headers["etag"],
                                    lastModified: response.headers["last-modified"], totalSize: nil, freshUntil: freshUntil)
            if response.status == 206 {
                // The end of the file may cut the range short; nothing else may change it.
                guard let (start, total) = Self.contentRange(response.headers["content-range"]), let range,
                      start == range.lowerBound, start <= total,
                      UInt64(response.body.count) == min(UInt64(range.count), total - start) else {
                    throw .network(url: url.absoluteString, reason: "the server answered a Range request with other bytes than asked for")
                }
                answer.totalSize = total
            }
            if !noStore { cache?.store(answer, for: key) }
            return answer
        default:
            throw .network(url: url.absoluteString, reason: "the server answered HTTP \(response.status)")
        }
    }

    private func download(_ request: URLRequest, limit: Int) throws(TileSourceError) -> DownloadDelegate.Response {
        let task = session.dataTask(with: request)
        let finished = DispatchSemaphore(value: 0)
        downloads.begin(task.taskIdentifier, limit: limit, asksRange: request.value(forHTTPHeaderField: "Range") != nil) {
            finished.signal()
        }
        task.resume()
        // The resource timeout ends every task; the margin only guards against a lost callback.
        if finished.wait(timeout: .now() + timeout * 4 + 5) == .timedOut {
            task.cancel()
            _ = downloads.finish(task.taskIdentifier)
            throw .network(url: request.url?.absoluteString ?? "", reason: "no answer within \(Int(timeout * 4)) s")
        }
        switch downloads.finish(task.taskIdentifier) {
        case .success(let response)?: return response
        case .failure(let reason)?: throw .network(url: request.url?.absoluteString ?? "", reason: reason)
        case nil: throw .network(url: request.url?.absoluteString ?? "", reason: "the download was lost")
        }
    }

    /// Seconds an answer stays fresh: `Cache-Control: max-age`, else `Expires`, else a tenth of
    /// the time since `Last-Modified` (at most a day), else ``defaultFreshness``.
    static func freshness(of headers: [String: String], now: Double) -> Double {
        if let control = headers["cache-control"]?.lowercased() {
            if control.contains("no-cache") || control.contains("no-store") { return 0 }
            for directive in control.split(separator: ",") {
                let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if parts.count == 2, parts[0] == "max-age", let seconds = Double(parts[1]), seconds.isFinite {
                    return min(max(seconds, 0), 365 * 86_400)
                }
            }
        }
        if let expires = headers["expires"].flatMap(parseHTTPDate) {
            return min(max(expires - now, 0), 365 * 86_400)
        }
        if let modified = headers["last-modified"].flatMap(parseHTTPDate), modified < now {
            return min((now - modified) / 10, 86_400)
        }
        return defaultFreshness
    }

    /// The start and total size of `bytes START-END/TOTAL`.
    static func contentRange(_ value: String?) -> (start: UInt64, total: UInt64)? {
        guard let value, value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6)
        let halves = spec.split(separator: "/")
        guard halves.count == 2, let total = UInt64(halves[1]),
              let start = halves[0].split(separator: "-").first.flatMap({ UInt64($0) }) else { return nil }
        return (start, total)
    }

    private static let httpDateFormats = ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]

    /// Seconds since 1970 of an HTTP date (RFC 9110's three forms); nil when it is none of them.
    static func parseHTTPDate(_ text: String) -> Double? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in httpDateFormats {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        }
        return nil
    }
}

/// Collects the bodies of a session's tasks, cutting one off once it passes its limit.
private final class DownloadDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: Data
    }

    private struct Download {
        var limit: Int
        var asksRange: Bool
        var body = Data()
        var response: HTTPURLResponse?
        var outcome: Result<Response, Failure>?
        var done: @Sendable () -> Void
    }

    struct Failure: Error {
        var reason: String
    }

    /// Seconds a request may take, for the reason given when one times out.
    let timeout: Double

    init(timeout: Double) {
        self.timeout = timeout
    }

    /// What went wrong with a request, in words: Foundation's own text for these is
    /// "The operation could not be completed. (NSURLErrorDomain error -1001.)".
    static func reason(for error: any Error, timeout: Double) -> String {
        let code = (error as NSError).domain == NSURLErrorDomain ? URLError.Code(rawValue: (error as NSError).code) : nil
        switch code {
        case .timedOut?: return String(format: "the server did not answer within %.0f s", timeout)
        case .cannotFindHost?, .dnsLookupFailed?: return "the host name could not be resolved"
        case .cannotConnectToHost?: return "the server refused the connection"
        case .networkConnectionLost?: return "the connection was lost during the transfer"
        case .notConnectedToInternet?: return "this machine has no network connection"
        case .secureConnectionFailed?, .serverCertificateUntrusted?, .serverCertificateHasBadDate?,
             .serverCertificateNotYetValid?, .serverCertificateHasUnknownRoot?, .clientCertificateRejected?:
            return "the TLS connection failed (certificate or protocol)"
        case .badServerResponse?, .cannotParseResponse?: return "the server's answer was not valid HTTP"
        case .httpTooManyRedirects?, .redirectToNonExistentLocation?: return "the server's redirects lead nowhere"
        case .cancelled?: return "the request was cancelled"
        case let other?: return "the request failed (URL error \(other.rawValue))"
        case nil: return "the request failed: \(String(describing: error).prefix(200))"
        }
    }

    // Guarded by `lock`: the session calls back on its own queue, the fetcher waits on another thread.
    private let lock = NSLock()
    private var downloads: [Int: Download] = [:]

    func begin(_ id: Int, limit: Int, asksRange: Bool, done: @escaping @Sendable () -> Void) {
        lock.lock()
        downloads[id] = Download(limit: limit, asksRange: asksRange, done: done)
        lock.unlock()
    }

    enum Outcome {
        case success(Response)
        case failure(String)
    }

    /// The outcome of download `id`, forgetting it.
    func finish(_ id: Int) -> Outcome? {
        lock.lock()
        defer { lock.unlock() }
        guard let download = downloads.removeValue(forKey: id) else { return nil }
        switch download.outcome {
        case .success(let response)?: return .success(response)
        case .failure(let failure)?: return .failure(failure.reason)
        case nil: return .failure("the download did not finish")
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        lock.lock()
        downloads[dataTask.taskIdentifier]?.response = response as? HTTPURLResponse
        let limit = downloads[dataTask.taskIdentifier]?.limit ?? 0
        let asksRange = downloads[dataTask.taskIdentifier]?.asksRange ?? false
        lock.unlock()
        if asksRange && (response as? HTTPURLResponse)?.statusCode == 200 {
            fail(dataTask, "the server does not serve byte ranges (it answered 200 to a Range request); an archive needs them")
            completionHandler(.cancel)
            return
        }
        // A length announced over the limit is refused before a byte of it arrives.
        if response.expectedContentLength > Int64(limit) {
            fail(dataTask, "the answer is \(response.expectedContentLength) bytes, more than the \(limit) allowed")
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.lock()
        var overLimit = false
        if var download = downloads[dataTask.taskIdentifier], download.outcome == nil {
            if download.body.count + data.count > download.limit {
                overLimit = true
            } else {
                download.body.append(data)
                downloads[dataTask.taskIdentifier] = download
            }
        }
        let limit = downloads[dataTask.taskIdentifier]?.limit ?? 0
        lock.unlock()
        if overLimit {
            fail(dataTask, "the answer is more than the \(limit) bytes allowed")
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        lock.lock()
        guard var download = downloads[task.taskIdentifier] else {
            lock.unlock()
            return
        }
        if download.outcome == nil {
            if let error {
                download.outcome = .failure(Failure(reason: Self.reason(for: error, timeout: timeout)))
            } else if let response = download.response {
                var headers: [String: String] = [:]
                for (name, value) in response.allHeaderFields {
                    if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
                }
                download.outcome = .success(Response(status: response.statusCode, headers: headers, body: download.body))
            } else {
                download.outcome = .failure(Failure(reason: "the answer was not HTTP"))
            }
        }
        downloads[task.taskIdentifier] = download
        let done = download.done
        lock.unlock()
        done()
    }

    private func fail(_ task: URLSessionTask, _ reason: String) {
        lock.lock()
        if downloads[task.taskIdentifier]?.outcome == nil {
            downloads[task.taskIdentifier]?.outcome = .failure(Failure(reason: reason))
        }
        lock.unlock()
    }
}
