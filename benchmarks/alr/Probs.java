// benchmarks/check_vs_alr.py: ALR's side (see that script's docstring for the build).
import weka.core.Instances;
import weka.core.converters.ConverterUtils.DataSource;
/** Train ALR.wdAnJE (options args[3..]) on args[0]; write the test probabilities of args[1]
 *  as CSV to args[2]. Our own helper for benchmarks/check_vs_alr.py; it only calls ALR's and
 *  Weka's public API. */
public class Probs {
  public static void main(String[] a) throws Exception {
    Instances tr = DataSource.read(a[0]); tr.setClassIndex(tr.numAttributes() - 1);
    Instances te = DataSource.read(a[1]); te.setClassIndex(te.numAttributes() - 1);
    ALR.wdAnJE c = new ALR.wdAnJE();
    String[] opts = java.util.Arrays.copyOfRange(a, 3, a.length);
    c.setOptions(opts);
    c.buildClassifier(tr);
    try (java.io.PrintWriter w = new java.io.PrintWriter(a[2])) {
      for (int i = 0; i < te.numInstances(); i++) {
        double[] p = c.distributionForInstance(te.instance(i));
        StringBuilder s = new StringBuilder();
        for (int k = 0; k < p.length; k++) { if (k > 0) s.append(','); s.append(Double.toString(p[k])); }
        w.println(s);
      }
    }
  }
}
