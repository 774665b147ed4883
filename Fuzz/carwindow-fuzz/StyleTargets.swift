import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// Sample features for evaluating filters and data-driven properties.
enum SampleFeatures {
    static let all: [VectorTileFeature?] = [
        nil,
        VectorTileFeature(id: 7, type: .lineString, properties: [
            "class": .string("primary"), "name": .string("Mannerheimintie"), "rank": .int(3),
            "brunnel": .string("bridge"), "oneway": .int(1), "render_height": .double(12.5),
        ], geometry: [[TilePoint(x: 0, y: 0), TilePoint(x: 4096, y: 4096)]]),
        VectorTileFeature(id: 8, type: .polygon, properties: [
            "class": .string("water"), "intermittent": .bool(false), "height": .uint(40), "level": .sint(-2),
            "name:fi": .string("Töölönlahti"),
        ], geometry: [[TilePoint(x: 0, y: 0), TilePoint(x: 10, y: 0), TilePoint(x: 10, y: 10)]]),
    ]
    static let zooms: [Double] = [0, 10.5, 14, 22, -1, .nan, .infinity]
}

/// One style document: parsed, then every layer's visibility, filter and paint and layout
/// properties evaluated at a few zooms for a few features.
enum StyleTarget {
    static func run(_ bytes: [UInt8]) {
        guard let style = try? Style(data: Data(bytes)) else { return }
        for layer in style.layers {
            for zoom in SampleFeatures.zooms {
                _ = layer.isVisible(atZoom: zoom)
                for feature in SampleFeatures.all {
                    if let feature { _ = layer.matches(feature, zoom: zoom) }
                    evaluate(layer, zoom: zoom, feature: feature)
                }
            }
        }
    }

    static func evaluate(_ layer: StyleLayer, zoom: Double, feature: VectorTileFeature?) {
        switch layer.paint {
        case .background(let paint):
            _ = (paint.backgroundColor.evaluate(zoom: zoom, feature: feature), paint.backgroundOpacity.evaluate(zoom: zoom, feature: feature))
        case .fill(let paint):
            _ = (paint.fillColor.evaluate(zoom: zoom, feature: feature), paint.fillOpacity.evaluate(zoom: zoom, feature: feature),
                 paint.fillOutlineColor?.evaluate(zoom: zoom, feature: feature), paint.fillAntialias.evaluate(zoom: zoom, feature: feature))
        case .line(let paint):
            _ = (paint.lineColor.evaluate(zoom: zoom, feature: feature), paint.lineWidth.evaluate(zoom: zoom, feature: feature),
                 paint.lineOpacity.evaluate(zoom: zoom, feature: feature), paint.lineDasharray?.evaluate(zoom: zoom, feature: feature),
                 paint.lineBlur.evaluate(zoom: zoom, feature: feature), paint.lineGapWidth.evaluate(zoom: zoom, feature: feature),
                 paint.lineOffset.evaluate(zoom: zoom, feature: feature))
        case .fillExtrusion(let paint):
            _ = (paint.fillExtrusionColor.evaluate(zoom: zoom, feature: feature), paint.fillExtrusionHeight.evaluate(zoom: zoom, feature: feature),
                 paint.fillExtrusionBase.evaluate(zoom: zoom, feature: feature), paint.fillExtrusionOpacity.evaluate(zoom: zoom, feature: feature))
        case .symbol(let paint):
            _ = (paint.textColor.evaluate(zoom: zoom, feature: feature), paint.textHaloColor.evaluate(zoom: zoom, feature: feature),
                 paint.textHaloWidth.evaluate(zoom: zoom, feature: feature), paint.textHaloBlur.evaluate(zoom: zoom, feature: feature),
                 paint.textOpacity.evaluate(zoom: zoom, feature: feature))
            _ = (paint.iconColor.evaluate(zoom: zoom, feature: feature), paint.iconHaloColor.evaluate(zoom: zoom, feature: feature),
                 paint.iconHaloWidth.evaluate(zoom: zoom, feature: feature), paint.iconOpacity.evaluate(zoom: zoom, feature: feature))
        case .circle(let paint):
            _ = (paint.circleRadius.evaluate(zoom: zoom, feature: feature), paint.circleColor.evaluate(zoom: zoom, feature: feature),
                 paint.circleOpacity.evaluate(zoom: zoom, feature: feature), paint.circleBlur.evaluate(zoom: zoom, feature: feature),
                 paint.circleStrokeWidth.evaluate(zoom: zoom, feature: feature),
                 paint.circleStrokeColor.evaluate(zoom: zoom, feature: feature),
                 paint.circleStrokeOpacity.evaluate(zoom: zoom, feature: feature),
                 paint.circlePitchAlignment.evaluate(zoom: zoom, feature: feature))
        }
        switch layer.layout {
        case .line(let layout):
            _ = (layout.lineCap.evaluate(zoom: zoom, feature: feature), layout.lineJoin.evaluate(zoom: zoom, feature: feature),
                 layout.lineMiterLimit.evaluate(zoom: zoom, feature: feature), layout.lineRoundLimit.evaluate(zoom: zoom, feature: feature))
        case .symbol(let layout):
            _ = (layout.textField.evaluate(zoom: zoom, feature: feature), layout.textFont.evaluate(zoom: zoom, feature: feature),
                 layout.textSize.evaluate(zoom: zoom, feature: feature), layout.textMaxAngle.evaluate(zoom: zoom, feature: feature),
                 layout.textMaxWidth.evaluate(zoom: zoom, feature: feature), layout.textLetterSpacing.evaluate(zoom: zoom, feature: feature),
                 layout.textLineHeight.evaluate(zoom: zoom, feature: feature), layout.textPadding.evaluate(zoom: zoom, feature: feature))
            _ = (layout.textOffset.evaluate(zoom: zoom, feature: feature), layout.textAnchor.evaluate(zoom: zoom, feature: feature),
                 layout.textTransform.evaluate(zoom: zoom, feature: feature), layout.textAllowOverlap.evaluate(zoom: zoom, feature: feature),
                 layout.textIgnorePlacement.evaluate(zoom: zoom, feature: feature), layout.textOptional.evaluate(zoom: zoom, feature: feature),
                 layout.symbolPlacement.evaluate(zoom: zoom, feature: feature), layout.symbolSpacing.evaluate(zoom: zoom, feature: feature),
                 layout.symbolSortKey?.evaluate(zoom: zoom, feature: feature), layout.symbolAvoidEdges.evaluate(zoom: zoom, feature: feature))
            _ = (layout.iconImage?.evaluate(zoom: zoom, feature: feature, availableImages: ["a", "b"]),
                 layout.iconSize.evaluate(zoom: zoom, feature: feature), layout.iconRotate.evaluate(zoom: zoom, feature: feature),
                 layout.iconOffset.evaluate(zoom: zoom, feature: feature), layout.iconAnchor.evaluate(zoom: zoom, feature: feature),
                 layout.iconTextFit.evaluate(zoom: zoom, feature: feature),
                 layout.iconTextFitPadding.evaluate(zoom: zoom, feature: feature),
                 layout.iconRotationAlignment.evaluate(zoom: zoom, feature: feature))
        case .none:
            break
        }
    }
}

/// One expression: the input is JSON, compiled both as a value expression and as a filter (the
/// legacy syntax included), each evaluated at a few zooms for a few features.
enum ExpressionTarget {
    static func run(_ bytes: [UInt8]) {
        guard let json = try? JSONValue(parsing: bytes) else { return }
        let compiled = [try? Expression(json, path: "fuzz"), try? Expression.filter(json, path: "fuzz")]
        for expression in compiled.compactMap({ $0 }) {
            for zoom in SampleFeatures.zooms {
                for feature in SampleFeatures.all {
                    let context = EvaluationContext(zoom: zoom, feature: feature)
                    _ = expression.evaluate(context)
                    _ = expression.matches(context)
                }
            }
        }
    }
}
