/* Minimal JNI glue from ALR's optimize.Wrapper to Debian's liblbfgsb (Fortran L-BFGS-B 3.0),
   standing in for the lbfgsb_wrapper native library the ALR repository does not ship. */
#include <jni.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
extern void setulb_(int*, int*, double*, double*, double*, int*, double*, double*, double*,
                    double*, double*, int*, char*, int*, char*, int*, int*, double*, size_t, size_t);
typedef struct { int n, m, iprint; double f, factr, pgtol; double *x, *l, *u, *g, *wa, dsave[29];
                 int *nbd, *iwa, lsave[4], isave[44]; char task[60], csave[60]; } S;
#define P ((S*)(intptr_t)h)
JNIEXPORT jlong JNICALL Java_optimize_LB_create(JNIEnv* e, jclass c, jint n, jint m) {
  S* s = calloc(1, sizeof(S)); s->n = n; s->m = m; s->iprint = -1;
  s->x = calloc(n, 8); s->l = calloc(n, 8); s->u = calloc(n, 8); s->g = calloc(n, 8);
  s->wa = calloc(2*m*n + 5*n + 11*m*m + 8*m, 8); s->nbd = calloc(n, 4); s->iwa = calloc(3*n, 4);
  memset(s->task, ' ', 60); memset(s->csave, ' ', 60); return (jlong)(intptr_t)s; }
JNIEXPORT void JNICALL Java_optimize_LB_free(JNIEnv* e, jclass c, jlong h) {
  free(P->x); free(P->l); free(P->u); free(P->g); free(P->wa); free(P->nbd); free(P->iwa); free(P); }
JNIEXPORT void JNICALL Java_optimize_LB_setBound(JNIEnv* e, jclass c, jlong h, jint i, jint code, jdouble lo, jdouble up) {
  P->nbd[i] = code; P->l[i] = lo; P->u[i] = up; }
JNIEXPORT void JNICALL Java_optimize_LB_setParams(JNIEnv* e, jclass c, jlong h, jdouble factr, jdouble pgtol, jint iprint) {
  P->factr = factr; P->pgtol = pgtol; P->iprint = iprint; }
JNIEXPORT void JNICALL Java_optimize_LB_setX(JNIEnv* e, jclass c, jlong h, jdoubleArray a) {
  (*e)->GetDoubleArrayRegion(e, a, 0, P->n, P->x); }
JNIEXPORT void JNICALL Java_optimize_LB_getX(JNIEnv* e, jclass c, jlong h, jdoubleArray a) {
  (*e)->SetDoubleArrayRegion(e, a, 0, P->n, P->x); }
JNIEXPORT void JNICALL Java_optimize_LB_getG(JNIEnv* e, jclass c, jlong h, jdoubleArray a) {
  (*e)->SetDoubleArrayRegion(e, a, 0, P->n, P->g); }
JNIEXPORT void JNICALL Java_optimize_LB_setFG(JNIEnv* e, jclass c, jlong h, jdouble f, jdoubleArray a) {
  P->f = f; (*e)->GetDoubleArrayRegion(e, a, 0, P->n, P->g); }
JNIEXPORT jdouble JNICALL Java_optimize_LB_getF(JNIEnv* e, jclass c, jlong h) { return P->f; }
JNIEXPORT void JNICALL Java_optimize_LB_setTask(JNIEnv* e, jclass c, jlong h, jstring t) {
  const char* s = (*e)->GetStringUTFChars(e, t, 0); memset(P->task, ' ', 60);
  memcpy(P->task, s, strlen(s)); (*e)->ReleaseStringUTFChars(e, t, s); }
JNIEXPORT jstring JNICALL Java_optimize_LB_step(JNIEnv* e, jclass c, jlong h) {
  S* s = P; setulb_(&s->n, &s->m, s->x, s->l, s->u, s->nbd, &s->f, s->g, &s->factr, &s->pgtol,
                    s->wa, s->iwa, s->task, &s->iprint, s->csave, s->lsave, s->isave, s->dsave, 60, 60);
  char buf[61]; memcpy(buf, s->task, 60); buf[60] = 0; return (*e)->NewStringUTF(e, buf); }
