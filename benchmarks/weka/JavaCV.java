// R rounds of k-fold cross-validation of a Weka classifier in one JVM, with the training
// folds discretised by Weka's supervised (MDL) Discretize filter: the Java side of the
// whole-process CPU comparison in benchmarks/bench_fixed_costs.sh. Our own helper; it only
// calls Weka's public API.
//   java -cp weka.jar:DIR JavaCV DATA.arff ROUNDS FOLDS CLASS [OPTIONS...]
import java.io.*;
import java.util.Random;
import weka.core.Instances;
import weka.classifiers.Classifier;
import weka.classifiers.Evaluation;
import weka.classifiers.meta.FilteredClassifier;
import weka.filters.supervised.attribute.Discretize;

public class JavaCV {
    public static void main(String[] args) throws Exception {
        Instances data = new Instances(new BufferedReader(new FileReader(args[0])));
        data.setClassIndex(data.numAttributes() - 1);
        int rounds = Integer.parseInt(args[1]), folds = Integer.parseInt(args[2]);
        String[] options = new String[args.length - 4];
        System.arraycopy(args, 4, options, 0, options.length);
        double correct = 0;
        for (int r = 0; r < rounds; r++) {
            Instances copy = new Instances(data);
            copy.randomize(new Random(r + 1));
            copy.stratify(folds);
            for (int f = 0; f < folds; f++) {
                FilteredClassifier fc = new FilteredClassifier();
                fc.setFilter(new Discretize());
                fc.setClassifier(Classifier.forName(args[3], options.clone()));
                Instances train = copy.trainCV(folds, f), test = copy.testCV(folds, f);
                fc.buildClassifier(train);
                Evaluation ev = new Evaluation(train);
                ev.evaluateModel(fc, test);
                correct += ev.correct();
            }
        }
        System.out.println("correct " + correct);
    }
}
