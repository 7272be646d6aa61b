// Times any Weka-API classifier on TRAIN.arff / TEST.arff: REPEATS times, build then
// distributionForInstance on every test row, INNER times over per repeat (so that a small
// data set's repeat is long enough to time), in thread CPU seconds per build + classify
// (JIT warm-up shows in the first repeat; the caller takes the minimum and median). Our own
// helper for benchmarks/bench_vs_java.py; it only calls Weka's public API.
//   java -cp weka.jar[:more]:DIR JavaTime CLASS TRAIN TEST REPEATS INNER [OPTIONS...]
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
        int repeats = Integer.parseInt(args[3]), inner = Integer.parseInt(args[4]);
        String[] options = new String[args.length - 5];
        System.arraycopy(args, 5, options, 0, options.length);
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        double checksum = 0;
        for (int rep = 0; rep < repeats; rep++) {
            long build = 0, classify = 0;
            for (int k = 0; k < inner; k++) {
                Classifier c = Classifier.forName(args[0], options.clone());
                long t0 = bean.getCurrentThreadCpuTime();
                c.buildClassifier(train);
                long t1 = bean.getCurrentThreadCpuTime();
                for (int i = 0; i < test.numInstances(); i++) {
                    checksum += c.distributionForInstance(test.instance(i))[0];
                }
                long t2 = bean.getCurrentThreadCpuTime();
                build += t1 - t0;
                classify += t2 - t1;
            }
            System.out.println("repeat " + rep + " train " + build / 1e9 / inner + " test "
                               + classify / 1e9 / inner);
        }
        System.out.println("checksum " + checksum);
    }
}
