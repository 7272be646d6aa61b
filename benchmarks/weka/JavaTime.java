// Times any Weka-API classifier on TRAIN.arff / TEST.arff: REPEATS times, build then
// distributionForInstance on every test row, in thread CPU seconds (JIT warm-up shows in the
// first repeat; the caller takes the minimum and median). Our own helper for
// benchmarks/bench_vs_java.py; it only calls Weka's public API.
//   java -cp weka.jar[:more]:DIR JavaTime CLASS TRAIN TEST REPEATS [OPTIONS...]
import java.io.*;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import weka.core.Instances;
import weka.core.Utils;
import weka.classifiers.Classifier;

public class JavaTime {
    public static void main(String[] args) throws Exception {
        Instances train = new Instances(new BufferedReader(new FileReader(args[1])));
        Instances test = new Instances(new BufferedReader(new FileReader(args[2])));
        train.setClassIndex(train.numAttributes() - 1);
        test.setClassIndex(test.numAttributes() - 1);
        int repeats = Integer.parseInt(args[3]);
        String[] options = new String[args.length - 4];
        System.arraycopy(args, 4, options, 0, options.length);
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        double checksum = 0;
        for (int rep = 0; rep < repeats; rep++) {
            Classifier c = Classifier.forName(args[0], options.clone());
            long t0 = bean.getCurrentThreadCpuTime();
            c.buildClassifier(train);
            long t1 = bean.getCurrentThreadCpuTime();
            for (int i = 0; i < test.numInstances(); i++) {
                checksum += c.distributionForInstance(test.instance(i))[0];
            }
            long t2 = bean.getCurrentThreadCpuTime();
            System.out.println("repeat " + rep + " train " + (t1 - t0) / 1e9 + " test "
                               + (t2 - t1) / 1e9);
        }
        System.out.println("checksum " + checksum);
    }
}
