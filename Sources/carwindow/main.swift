import CarWindow
do {
    let context = try await RenderContext()
    print(context.info)
    await context.shutdown()
} catch {
    print("error: \(error)")
}
