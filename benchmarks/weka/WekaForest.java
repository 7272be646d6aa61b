// Trains Weka's RandomForest (or RandomTree) on TRAIN.arff and prints the class distribution
// of every TEST.arff row with full double precision, plus the build and classify times.
// Our own helper for benchmarks/compare_rf_weka.py; it only calls Weka's public API.
//   java -cp weka.jar:DIR WekaForest TRAIN TEST OUT [forest|tree]
import java.io.*;
import weka.core.Instances;
import weka.classifiers.Classifier;
import weka.classifiers.trees.RandomForest;
import weka.classifiers.trees.RandomTree;

public class WekaForest {
    public static void main(String[] args) throws Exception {
        Instances train = new Instances(new BufferedReader(new FileReader(args[0])));
        Instances test = new Instances(new BufferedReader(new FileReader(args[1])));
        train.setClassIndex(train.numAttributes() - 1);
        test.setClassIndex(test.numAttributes() - 1);
        train.deleteWithMissingClass();
        Classifier c;
        if (args.length > 3 && args[3].equals("tree")) {
            RandomTree t = new RandomTree();
            t.setOptions(new String[] {"-K", "0", "-M", "1", "-S", "1"});
            c = t;
        } else {
            RandomForest f = new RandomForest();
            f.setOptions(new String[] {"-I", "10", "-K", "0", "-S", "1"});
            c = f;
        }
        long t0 = System.nanoTime();
        c.buildClassifier(train);
        long t1 = System.nanoTime();
        double[][] out = new double[test.numInstances()][];
        for (int i = 0; i < test.numInstances(); i++) {
            out[i] = c.distributionForInstance(test.instance(i));
        }
        long t2 = System.nanoTime();
        PrintWriter w = new PrintWriter(new BufferedWriter(new FileWriter(args[2])));
        w.println("# build_seconds " + (t1 - t0) / 1e9 + " classify_seconds " + (t2 - t1) / 1e9);
        for (double[] d : out) {
            StringBuilder sb = new StringBuilder();
            for (int j = 0; j < d.length; j++) {
                if (j > 0) sb.append(',');
                sb.append(Double.toString(d[j]));
            }
            w.println(sb);
        }
        w.close();
    }
}
