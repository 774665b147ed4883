import Foundation
import Testing
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowMap
@testable import CarWindowProjection
@testable import CarWindowTestSupport

extension SessionStyleTests {
    /// A label with a Swedish name: Swedish labels show it, the Finnish default and a language
    /// the data lacks show the style's own, and the language stays across a day/night switch.
    @Test func labelsSwitchLanguageAtRuntimeAndFallBackToTheStylesNames() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        try await session.editStyles { style in
            try style.addSource(id: "places", json: Data(#"{"type": "geojson"}"#.utf8))
            try style.addLayer(json: Data(#"""
                {"id": "places", "type": "symbol", "source": "places",
                 "layout": {"text-field": ["get", "name"], "text-font": ["Noto Sans Bold"], "text-size": 28},
                 "paint": {"text-color": "#ff00ff"}}
                """#.utf8))
        }
        let centre = await session.camera.center
        try await session.setGeoJSON(GeoJSONData(features: [GeoJSONFeature(
            geometry: .point(centre), properties: ["name": .string("Helsinki"), "name:sv": .string("Helsingfors")])]),
            forSource: "places")
        func picture() async throws -> RGBAImage {
            await time.advance(by: 0.2)
            return try #require(await session.snapshot())
        }
        let finnish = try await picture()
        await session.setLabelLanguage(LabelLanguage("sv"))
        #expect(await session.labelLanguage == LabelLanguage("sv"))
        let swedish = try await picture()
        await session.setLabelLanguage(LabelLanguage("ja"))
        let japanese = try await picture()
        await session.setLabelLanguage(nil)
        let back = try await picture()
        // Pictures of one renderer are exact; 8 levels allow for nothing but rounding.
        let tolerance = 8
        let changed = try #require(swedish.difference(from: finnish, tolerance: tolerance))
        #expect(changed.differingPixels > 200, "the label reads Helsingfors: \(changed)")
        #expect(japanese.difference(from: finnish, tolerance: tolerance)?.differingPixels == 0, "no Japanese name: Helsinki")
        #expect(back.difference(from: finnish, tolerance: tolerance)?.differingPixels == 0, "nil: the style's names again")

        // Across a switch to night and back the language stays.
        await session.setLabelLanguage(LabelLanguage("SV-SE"))
        await session.setAppearance(.night)
        await session.setAppearance(.day)
        let again = try await picture()
        #expect(again.difference(from: swedish, tolerance: tolerance)?.differingPixels == 0)
        await session.close()
        await context.shutdown()
    }
}
