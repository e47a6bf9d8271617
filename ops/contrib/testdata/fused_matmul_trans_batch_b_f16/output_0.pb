

Boutput_0.pbJ<-Ã…8|BØ∆VEH˚»µI5æ^ƒZDŸ∆1KZD¢∆X…íGΩà9¢¿U…˛≈bE≤æFƒ¡»3Hè>iAl¡