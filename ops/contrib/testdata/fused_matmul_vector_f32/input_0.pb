
B
input_0.pbJ¹¿@–Z>ÎJq?X`¿½ªÀòE¿àB¾