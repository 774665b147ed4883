import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowTestSupport

@Suite struct TileIDTests {
    @Test func parentAndChildren() {
        let tile = TileID(z: 14, x: 9327, y: 4742)
        #expect(tile.parent == TileID(z: 13, x: 4663, y: 2371))
        #expect(tile.children.allSatisfy { $0.parent == tile })
        #expect(tile.ancestor(atZoom: 10) == TileID(z: 10, x: 582, y: 296))
        #expect(!TileID(z: 2, x: 4, y: 0).isValid)
    }
}
