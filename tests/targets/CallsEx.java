// --calls target (tests/e2e/test_calls.sh), run with -XX:+ExtendedDTraceProbes: exceptions
// through JIT-compiled frames, which fire no method__return.
//   CallsEx.c1 -> c2 -> c3 each called exactly 50000 times from CallsEx.main; c3 throws,
//   main catches.  After a few thousand iterations all four are compiled (C1, then C2).
public class CallsEx {
    static void c3(int i) {
        throw new IllegalStateException();
    }

    static void c2(int i) {
        c3(i);
    }

    static void c1(int i) {
        c2(i);
    }

    public static void main(String[] args) {
        int caught = 0;
        for (int i = 0; i < 50000; i++) {
            try {
                c1(i);
            } catch (IllegalStateException e) {
                caught++;
            }
        }
        System.out.println(caught);
    }
}
