package dev.riffle.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.ui.RectangleAnchor;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The soak plot of docs/validation: dead tuples over time, one panel per system on a shared time axis (seconds since
 * the system's producer started), because the baseline's count is orders of magnitude above Riffle's and one linear
 * axis would flatten Riffle's line onto zero. Riffle's panel carries the limit as a horizontal marker.
 */
final class SoakChart {

    private SoakChart() {
    }

    /**
     * Writes the PNG. {@code perSystem}: system name to its samples and the sampler's load-start time (samples are
     * shifted so that 0 is the producer's start); {@code limit}: the dead-tuple limit drawn on Riffle's panel.
     */
    static void write(Path png, Map<String, List<DeadTupleSampler.Sample>> perSystem, Map<String, Double> loadStart,
                      long limit, String title) throws IOException {
        NumberAxis time = new NumberAxis("seconds since the producer started");
        CombinedDomainXYPlot combined = new CombinedDomainXYPlot(time);
        combined.setGap(12);
        for (Map.Entry<String, List<DeadTupleSampler.Sample>> e : perSystem.entrySet()) {
            String system = e.getKey();
            double zero = loadStart.getOrDefault(system, 0.0);
            if (Double.isNaN(zero)) {
                zero = 0;
            }
            XYSeries schema = new XYSeries(system + ": dead tuples across the schema");
            XYSeries closures = new XYSeries(system + ": dead tuples on closure partitions");
            for (DeadTupleSampler.Sample s : e.getValue()) {
                schema.add(s.seconds() - zero, s.schemaDead());
                closures.add(s.seconds() - zero, s.closureDead());
            }
            XYSeriesCollection data = new XYSeriesCollection();
            data.addSeries(schema);
            boolean riffle = system.equals("riffle");
            if (riffle) {
                data.addSeries(closures);
            }
            NumberAxis y = new NumberAxis(system + " (n_dead_tup)");
            y.setAutoRangeIncludesZero(true);
            XYLineAndShapeRenderer r = new XYLineAndShapeRenderer(true, true);
            r.setSeriesPaint(0, riffle ? new Color(0x1f77b4) : new Color(0xd62728));
            r.setSeriesPaint(1, new Color(0x2ca02c));
            r.setSeriesStroke(0, new BasicStroke(2f));
            r.setSeriesStroke(1, new BasicStroke(2f));
            XYPlot plot = new XYPlot(data, null, y, r);
            plot.setBackgroundPaint(Color.WHITE);
            plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
            plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
            if (riffle) {
                // keep the limit in view even when every sample is 0
                y.setRange(0, limit * 1.2);
                ValueMarker m = new ValueMarker(limit, Color.GRAY, new BasicStroke(1.5f, BasicStroke.CAP_BUTT,
                        BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
                m.setLabel("limit " + limit);
                m.setLabelAnchor(RectangleAnchor.TOP_LEFT);
                m.setLabelTextAnchor(TextAnchor.BOTTOM_LEFT);
                plot.addRangeMarker(m);
                long max = e.getValue().stream().mapToLong(DeadTupleSampler.Sample::schemaDead).max().orElse(0);
                if (max > limit) {
                    y.setAutoRange(true);
                }
            }
            combined.add(plot, 1);
        }
        JFreeChart chart = new JFreeChart(title, JFreeChart.DEFAULT_TITLE_FONT, combined, true);
        chart.setBackgroundPaint(Color.WHITE);
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 1000, 620);
    }
}
