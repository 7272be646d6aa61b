package optimize;
/** JNI glue to Fortran L-BFGS-B 3.0 (Debian liblbfgsb); replaces the unshipped lbfgsb_wrapper. */
class LB {
  static { System.loadLibrary("lbfgsb_glue"); }
  static native long create(int n, int m);
  static native void free(long h);
  static native void setBound(long h, int i, int code, double lo, double up);
  static native void setParams(long h, double factr, double pgtol, int iprint);
  static native void setX(long h, double[] x);
  static native void getX(long h, double[] x);
  static native void getG(long h, double[] g);
  static native void setFG(long h, double f, double[] g);
  static native double getF(long h);
  static native void setTask(long h, String t);
  static native String step(long h);
}
