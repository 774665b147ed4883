// The renderer's API speaks tiles, cameras and styles (and hands out NV12 frames), so an engine
// that depends on CarWindowMap alone gets those modules with `import CarWindowMap`.
@_exported import CarWindowGeo
@_exported import CarWindowStyle
@_exported import CarWindowVideoCore
