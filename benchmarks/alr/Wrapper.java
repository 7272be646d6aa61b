package optimize;

import java.util.List;

/** Stand-in for ALR's optimize.Wrapper (written for benchmarks/check_vs_alr.py, not taken from
 *  ALR): the same public methods, driving Fortran L-BFGS-B 3.0's setulb reverse-communication
 *  loop through LB, counting accepted steps (NEW_X) as iterations. */
public class Wrapper {
	private long h; private final int n; private double factr, pgtol; private int iprint = -1;
	private String task = "";
	Wrapper(int variablesNo, int correctionsNo) { n = variablesNo; h = LB.create(variablesNo, correctionsNo); }
	public void setBounds(List<Bound> bounds) {
		for (int i = 0; i < bounds.size(); i++) {
			Bound b = bounds.get(i);
			int code = (!b.isLowerBoundDefined() && !b.isUpperBoundDefined()) ? 0
				: (b.isLowerBoundDefined() && !b.isUpperBoundDefined()) ? 1
				: (b.isLowerBoundDefined() && b.isUpperBoundDefined()) ? 2 : 3;
			LB.setBound(h, i, code, b.lowerBound == null ? 0 : b.lowerBound, b.upperBound == null ? 0 : b.upperBound);
		}
	}
	public void setFunctionFactor(double v) { factr = v; }
	public void setMaxGradientNorm(double v) { pgtol = v; }
	public void setDebugLevel(int v) { iprint = v; }
	public double[] getX() { double[] x = new double[n]; LB.getX(h, x); return x; }
	public void setX(double[] x) { LB.setX(h, x); }
	public double getFunctionValue() { return LB.getF(h); }
	public double[] getGradient() { double[] g = new double[n]; LB.getG(h, g); return g; }
	public String getStateDescription() { return task.trim(); }
	public IterationsInfo iterate(DifferentiableFunction fun, int maxIterations, IterationFinishedListener listener) throws LBFGSBException {
		LB.setParams(h, factr, pgtol, iprint);
		LB.setTask(h, "START");
		int it = 0, fe = 0;
		while (true) {
			if (maxIterations > 0 && it == maxIterations) {
				LB.setTask(h, "STOP"); task = LB.step(h);
				return new IterationsInfo(it, fe, IterationsInfo.StopType.MAX_ITERATIONS, getStateDescription());
			}
			task = LB.step(h);
			if (task.startsWith("FG")) {
				fe++;
				FunctionValues v = fun.getValues(getX());
				if (v == null) { LB.setTask(h, "STOP"); task = LB.step(h);
					return new IterationsInfo(it, fe, IterationsInfo.StopType.USER, getStateDescription()); }
				LB.setFG(h, v.functionValue, v.gradient);
			} else if (task.startsWith("NEW_X")) {
				it++;
				if (listener != null && !listener.iterationFinished(getX(), getFunctionValue(), getGradient())) {
					LB.setTask(h, "STOP"); task = LB.step(h);
					return new IterationsInfo(it, fe, IterationsInfo.StopType.USER, getStateDescription());
				}
			} else if (task.startsWith("CONV")) {
				return new IterationsInfo(it, fe, IterationsInfo.StopType.OTHER_STOP_CONDITIONS, getStateDescription());
			} else if (task.startsWith("ABNO")) {
				return new IterationsInfo(it, fe, IterationsInfo.StopType.ABNORMAL, getStateDescription());
			} else throw new LBFGSBException(getStateDescription());
		}
	}
	public void close() { if (h != 0) { LB.free(h); h = 0; } }
}
