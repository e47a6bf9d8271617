
2blue2red2mauve2green2redB
input_0.pb