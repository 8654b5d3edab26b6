// --calls target (tests/e2e/test_calls.sh), run with -XX:+ExtendedDTraceProbes:
//   Calls.alpha  called 100 times from Calls.main
//   Calls.beta   called 3 times by each alpha: 300 calls, caller Calls.alpha
//   Calls.sleeper called once, sleeps 200 ms (in java.lang.Thread.sleep, a native method
//                 that HotSpot's probes also report)
public class Calls {
    static int beta(int j) {
        return j * 2;
    }

    static int alpha(int i) {
        int s = 0;
        for (int j = 0; j < 3; j++)
            s += beta(j);
        return s + i;
    }

    static void sleeper() throws InterruptedException {
        Thread.sleep(200);
    }

    public static void main(String[] args) throws Exception {
        int t = 0;
        for (int i = 0; i < 100; i++)
            t += alpha(i);
        sleeper();
        System.out.println(t);
    }
}
