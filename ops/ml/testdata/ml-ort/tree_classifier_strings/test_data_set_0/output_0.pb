
22setosa2setosa2	virginica2setosa2	virginica2setosa2setosa2setosa2setosa2
versicolor2
versicolor2
versicolor2setosa2	virginica2
versicolor2
versicolor2	virginica2setosa2
versicolor2
versicolor2	virginica2	virginica2	virginica2	virginica2
versicolor2setosa2	virginica2setosa2
versicolor2setosa2	virginica2	virginica2
versicolor2	virginica2setosa2	virginica2setosa2setosa2
versicolor2	virginica2
versicolor2	virginica2	virginica2setosa2setosa2
versicolor2	virginica2	virginica2
versicolor2	virginicaBoutput_0.pb