// The link's API speaks the protocol's types (capabilities, touch events, buttons, errors), so
// `import CarWindowSDL` brings them along.
@_exported import CarWindowSDLProtocol
