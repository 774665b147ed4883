// `import CarWindow` brings every engine-facing module: the map data and camera, tiles on servers, styles,
// frames and sinks, the renderer, the encoders, the outputs, the projection session and the
// SmartDeviceLink link. Import a single module to depend on less (CarWindowMap alone draws
// maps without linking an encoder).
@_exported import CarWindowGeo
@_exported import CarWindowStyle
@_exported import CarWindowVideoCore
@_exported import CarWindowMap
@_exported import CarWindowRemoteTiles
@_exported import CarWindowH264
@_exported import CarWindowSinks
@_exported import CarWindowProjection
@_exported import CarWindowSDLProtocol
@_exported import CarWindowSDLSecurity
@_exported import CarWindowSDL
